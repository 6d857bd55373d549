"""A PyTorch peer for bench/train_speed.py: a JoeyNMT-style recurrent model in plain torch.nn.

It stands for an established PyTorch GRU + attention toolkit (JoeyNMT's RecurrentEncoder /
RecurrentDecoder, "rnn" configuration): a joint embedding table; one bidirectional GRU layer
over pack_padded_sequence, bridged to the decoder by tanh(Linear); Bahdanau attention; a GRU
decoder with input feeding, stepped in a Python loop over target time as JoeyNMT does for
teacher forcing, a tanh attentional layer, then a bias-free output projection; cross-entropy
with label smoothing, padding ignored; Adam; global-norm clipping. At embedding 256, 256 per
encoder direction, decoder 256, attention 256 and vocabulary 4000: 3.95M parameters.
"""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD_ID = 0


class Encoder(nn.Module):
    def __init__(self, embedding_size, hidden_size, dropout):
        super().__init__()
        self.rnn = nn.GRU(embedding_size, hidden_size, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)

    def forward(self, embedded, lengths):
        """[B, S, E], [B] -> memory [B, S, 2H] (zero at padding), final state [B, 2H]."""
        packed = pack_padded_sequence(self.dropout(embedded), lengths, batch_first=True,
                                      enforce_sorted=False)
        output, hidden = self.rnn(packed)
        memory, _ = pad_packed_sequence(output, batch_first=True, total_length=embedded.shape[1])
        final = torch.cat([hidden[0], hidden[1]], dim=-1)  # [forward; backward], unsorted back
        return self.dropout(memory), final


class BahdanauAttention(nn.Module):
    def __init__(self, key_size, query_size, hidden_size):
        super().__init__()
        self.key_layer = nn.Linear(key_size, hidden_size, bias=False)
        self.query_layer = nn.Linear(query_size, hidden_size, bias=False)
        self.energy_layer = nn.Linear(hidden_size, 1, bias=False)

    def forward(self, query, proj_keys, values, mask):
        """query [B, 1, Q], proj_keys [B, S, A], values [B, S, M], mask [B, 1, S] bool."""
        scores = self.energy_layer(torch.tanh(self.query_layer(query) + proj_keys))
        scores = scores.squeeze(2).unsqueeze(1).masked_fill(~mask, float("-inf"))
        return torch.bmm(torch.softmax(scores, dim=-1), values)  # [B, 1, M]


class Decoder(nn.Module):
    def __init__(self, embedding_size, encoder_size, hidden_size, attention_size,
                 vocab_size, dropout):
        super().__init__()
        self.hidden_size = hidden_size
        self.bridge = nn.Linear(encoder_size, hidden_size)
        self.rnn = nn.GRU(embedding_size + hidden_size, hidden_size, batch_first=True)
        self.attention = BahdanauAttention(encoder_size, hidden_size, attention_size)
        self.att_vector_layer = nn.Linear(hidden_size + encoder_size, hidden_size)
        self.output_layer = nn.Linear(hidden_size, vocab_size, bias=False)
        self.emb_dropout = nn.Dropout(dropout)
        self.hidden_dropout = nn.Dropout(dropout)

    def forward(self, embedded, memory, final_state, mask):
        """Teacher forcing: embedded [B, T, E] -> logits [B, T, V]."""
        hidden = torch.tanh(self.bridge(final_state)).unsqueeze(0)  # [1, B, H]
        proj_keys = self.attention.key_layer(memory)
        att_vector = embedded.new_zeros(embedded.shape[0], 1, self.hidden_size)
        att_vectors = []
        for t in range(embedded.shape[1]):
            rnn_input = self.emb_dropout(torch.cat([embedded[:, t:t + 1], att_vector], dim=2))
            _, hidden = self.rnn(rnn_input, hidden)
            query = hidden[-1].unsqueeze(1)
            context = self.attention(query, proj_keys, memory, mask)
            att_vector = torch.tanh(self.att_vector_layer(
                self.hidden_dropout(torch.cat([query, context], dim=2))))
            att_vectors.append(att_vector)
        return self.output_layer(torch.cat(att_vectors, dim=1))


class RecurrentModel(nn.Module):
    def __init__(self, vocab_size, embedding_size=256, encoder_size=256, hidden_size=256,
                 attention_size=256, dropout=0.2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=PAD_ID)
        self.encoder = Encoder(embedding_size, encoder_size, dropout)
        self.decoder = Decoder(embedding_size, 2 * encoder_size, hidden_size, attention_size,
                               vocab_size, dropout)

    def forward(self, source_ids, source_length, target_input):
        memory, final_state = self.encoder(self.embedding(source_ids), source_length)
        mask = (source_ids != PAD_ID).unsqueeze(1)
        return self.decoder(self.embedding(target_input), memory, final_state, mask)


def num_parameters(model):
    return sum(p.numel() for p in model.parameters())


def make_trainer(vocab_size, learning_rate, clip_norm, seed=1, label_smoothing=0.1, **sizes):
    """(model, train_step): train_step(batch of numpy arrays) runs one Adam update."""
    torch.manual_seed(seed)
    model = RecurrentModel(vocab_size, **sizes)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD_ID, label_smoothing=label_smoothing)

    def train_step(batch):
        source_ids = torch.from_numpy(batch["source_ids"]).long()
        source_length = torch.from_numpy(batch["source_length"]).long()  # on CPU, as packing wants
        target_input = torch.from_numpy(batch["target_input"]).long()
        target_output = torch.from_numpy(batch["target_output"]).long()
        logits = model(source_ids, source_length, target_input)
        loss = criterion(logits.reshape(-1, logits.shape[-1]), target_output.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        return loss.item()

    return model, train_step

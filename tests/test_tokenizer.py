"""SentencePiece training and the Tokenizer wrapper."""

import collections
import json
import os
import random
import re
import shutil
import unicodedata

import pytest
import sentencepiece as spm

from bench import demo_probe
from data_pipeline import embedded
from data_pipeline.placeholders import TOKENS
from data_pipeline.tokenizer import (BOS_ID, EOS_ID, FLAGGED_SHARE, MIN_CALIBRATION, PAD_ID,
                                     PRIOR_PIECES, UNK_ID, Tokenizer, _Familiarity,
                                     train_tokenizer)


@pytest.fixture(scope="module")
def corpus():
    return embedded.generate(1000, 20, 0, seed=3, target_locale="pt_BR")


@pytest.fixture(scope="module")
def pairs(corpus):
    return [(example.source, example.target) for example in corpus.train]


@pytest.fixture(scope="module")
def joint(pairs, tmp_path_factory):
    return train_tokenizer(pairs, str(tmp_path_factory.mktemp("joint")), 200, "unigram", joint=True)


def test_special_ids_are_fixed(joint):
    processor = spm.SentencePieceProcessor(model_file=joint.model_files[0])
    assert (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)
    assert [processor.id_to_piece(i) for i in range(4)] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id()) == (0, 1, 2, 3)


def test_unseen_sentence_round_trips(joint, corpus):
    for example in corpus.dev:  # canonical: a varied source may have a letter train lacks ("Last")
        assert joint.decode_source(joint.encode_source(example.canonical)) == example.canonical
        assert joint.decode_target(joint.encode_target(example.target)) == example.target


def test_ordinal_indicators_survive_and_other_text_is_nfkc(pairs, tmp_path):
    """SentencePiece's own NFKC rule would decode "1º" and "nº" as "1o" and "no"."""
    ordinals = [("May 1", "1º de maio"), ("number 2", "nº 2"), ("2nd", "2ª")]
    tokenizer = train_tokenizer(pairs + ordinals, str(tmp_path), 200, "unigram", joint=True)
    for sentence in ("1º de maio", "nº 2", "a 2ª casa"):
        assert tokenizer.decode_target(tokenizer.encode_target(sentence)) == sentence
    decomposed = unicodedata.normalize("NFD", "a casa é vermelha")
    assert tokenizer.encode_target(decomposed) == tokenizer.encode_target("a casa é vermelha")
    assert tokenizer.encode_source("two\u00a0red  cars") == tokenizer.encode_source("two red cars")
    invisible = "\ufefftwo red\u200b cars\x07\u00ad"
    assert tokenizer.encode_source(invisible) == tokenizer.encode_source("two red cars")


def test_protected_tokens_are_one_piece_each_and_used_when_training_held_them(joint, pairs, tmp_path):
    messages = [("Delete ｟0｠ from ｟1｠?", "Excluir ｟0｠ de ｟1｠?")] * 5
    tokenizer = train_tokenizer(pairs + messages, str(tmp_path), 200, "bpe", joint=False,
                                lowercase_source=True)
    assert tokenizer.protected_tokens == 2
    text, originals = tokenizer.protect("Delete %(Name)s from <b>{place}</b>")
    assert (text, originals) == ("Delete ｟0｠ from ｟1｠{place}</b>", ["%(Name)s", "<b>"])
    ids = tokenizer.encode_source(text)
    assert tokenizer.target_pieces(tokenizer.protected_target_ids(ids)) == ["｟0｠", "｟1｠"]
    for model in (tokenizer, joint):  # every token is a piece of every vocabulary: NFKC, digits aside
        assert [model.target_pieces(model.encode_target(token))[-1] for token in TOKENS] == TOKENS
        assert [model.source_pieces(model.encode_source(token))[-1] for token in TOKENS] == TOKENS
    translation = tokenizer.decode_target(tokenizer.encode_target("Excluir ｟1｠ de ｟0｠?"))
    assert tokenizer.restore(translation, originals) == "Excluir <b> de %(Name)s?"
    assert joint.protected_tokens == 0 and joint.protect(text) == (text, [])  # never trained on any


def test_encoding_adds_no_special_ids(joint):
    ids = joint.encode_target("Eu comprei as duas casas vermelhas.")
    assert ids and not {PAD_ID, UNK_ID, BOS_ID, EOS_ID} & set(ids)


def test_decode_stops_at_the_first_eos_and_drops_pad_and_bos(joint):
    sentence = "a terceira casa"
    ids = joint.encode_target(sentence)
    other = joint.encode_target("o terceiro carro")
    assert joint.decode_target([BOS_ID] + ids + [EOS_ID] + other + [PAD_ID, PAD_ID]) == sentence
    assert joint.decode_target(ids + [PAD_ID]) == sentence
    assert joint.decode_source([BOS_ID] + ids + [EOS_ID] + other) == sentence


def test_digits_are_single_pieces(joint):
    pieces = spm.SentencePieceProcessor(model_file=joint.model_files[0]).encode("1234", out_type=str)
    assert [piece.strip("\u2581") for piece in pieces if piece.strip("\u2581")] == list("1234")


def test_joint_model_files_and_sizes(joint):
    assert [os.path.basename(path) for path in joint.model_files] == ["spm.model", "tokenizer.json"]
    assert joint.source_vocab_size == joint.target_vocab_size == 200


def test_separate_models_load_by_file_names(pairs, tmp_path):
    trained = train_tokenizer(pairs, str(tmp_path), 150, "bpe", joint=False)
    assert sorted(os.listdir(tmp_path)) == ["source.model", "target.model", "tokenizer.json"]
    loaded = Tokenizer.load(str(tmp_path))
    assert loaded.model_files == trained.model_files
    english, portuguese = pairs[0]
    assert loaded.encode_source(english) == trained.encode_source(english)
    assert loaded.decode_target(loaded.encode_target(portuguese)) == portuguese
    # Each side has its own pieces: English ones are not in the target model.
    target_pieces = spm.SentencePieceProcessor(model_file=str(tmp_path / "target.model"))
    assert target_pieces.piece_to_id("\u2581bought") == UNK_ID


def test_copy_to_makes_a_directory_that_loads_alone(joint, tmp_path):
    copies = joint.copy_to(str(tmp_path / "model_dir"))
    assert copies == [str(tmp_path / "model_dir" / name) for name in ("spm.model", "tokenizer.json")]
    copied = Tokenizer.load(str(tmp_path / "model_dir"))
    sentence = "the two red cars"
    assert copied.encode_source(sentence) == joint.encode_source(sentence)


def test_load_from_a_directory_without_models(tmp_path):
    with pytest.raises(FileNotFoundError, match="no SentencePiece model in .*spm.model"):
        Tokenizer.load(str(tmp_path))


def test_vocab_size_is_a_soft_limit(pairs, tmp_path):
    tokenizer = train_tokenizer(pairs[:200], str(tmp_path), 5000, "unigram", joint=True)
    assert 100 < tokenizer.source_vocab_size < 5000


def test_vocab_too_small_for_the_alphabet(pairs, tmp_path):
    with pytest.raises(ValueError, match="data.vocab_size 10 is too small") as refused:
        train_tokenizer(pairs, str(tmp_path), 10, "unigram", joint=True)
    needed = int(re.search(r"(\d+) in all", str(refused.value)).group(1))
    alphabet = {char for pair in pairs for text in pair for char in text if not char.isspace()}
    assert needed > len(alphabet) and "--character_coverage" not in str(refused.value)


@pytest.fixture(scope="module")
def separate(pairs, tmp_path_factory):
    return train_tokenizer(pairs, str(tmp_path_factory.mktemp("separate")), 150, "unigram", joint=False)


def _contents(directory):
    """{file name: bytes} of a directory."""
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))}


def test_copy_to_copies_per_side_models_under_their_names(separate, corpus, tmp_path):
    directory = str(tmp_path / "model_dir")
    copies = separate.copy_to(directory)
    assert copies == [os.path.join(directory, name) for name in ("source.model", "target.model", "tokenizer.json")]
    assert sorted(os.listdir(directory)) == ["source.model", "target.model", "tokenizer.json"]
    originals = _contents(os.path.dirname(separate.model_files[0]))
    assert _contents(directory) == originals
    copied = Tokenizer.load(directory)
    assert copied.model_files == copies
    assert (copied.source_vocab_size, copied.target_vocab_size) == (
        separate.source_vocab_size, separate.target_vocab_size)
    for example in corpus.dev:
        assert copied.encode_source(example.source) == separate.encode_source(example.source)
        assert copied.encode_target(example.target) == separate.encode_target(example.target)
        ids = separate.encode_target(example.target)
        # (round trips: test_unseen_sentence_round_trips; a 1,000-pair target side may lack a capital)
        assert copied.decode_target(ids) == separate.decode_target(ids)


@pytest.mark.parametrize("which", ["joint", "separate"])
def test_copy_to_its_own_directory_changes_nothing(which, joint, separate, monkeypatch,
                                                   tmp_path):
    tokenizer = {"joint": joint, "separate": separate}[which]
    directory = os.path.dirname(tokenizer.model_files[0])
    before = _contents(directory)
    mtimes = [os.stat(path).st_mtime_ns for path in tokenizer.model_files]
    link = tmp_path / "link"
    link.symlink_to(directory, target_is_directory=True)
    # The same directory spelled four ways: as given, with "/./", relative,
    # and through a symbolic link.
    monkeypatch.chdir(os.path.dirname(directory))
    for spelling in (directory, os.path.join(directory, "."), os.path.basename(directory),
                     str(link)):
        copies = tokenizer.copy_to(spelling)
        assert copies == [os.path.join(spelling, os.path.basename(path))
                          for path in tokenizer.model_files]
        assert [os.path.realpath(path) for path in copies] == tokenizer.model_files
    assert _contents(directory) == before
    assert [os.stat(path).st_mtime_ns for path in tokenizer.model_files] == mtimes


def test_load_prefers_the_joint_model_when_both_kinds_exist(joint, separate, tmp_path):
    """Tokenizer.load documents: spm.model when it exists, else source.model and target.model."""
    directory = str(tmp_path)
    separate.copy_to(directory)
    assert Tokenizer.load(directory).model_files == [
        os.path.join(directory, name) for name in ("source.model", "target.model", "tokenizer.json")]
    joint.copy_to(directory)
    assert sorted(os.listdir(directory)) == ["source.model", "spm.model", "target.model", "tokenizer.json"]
    loaded = Tokenizer.load(directory)
    assert loaded.model_files == [os.path.join(directory, name) for name in ("spm.model", "tokenizer.json")]
    sentence = "Eu comprei as duas casas vermelhas."
    assert loaded.encode_target(sentence) == joint.encode_target(sentence)
    assert loaded.encode_target(sentence) != separate.encode_target(sentence)


def test_load_needs_both_per_side_models(separate, tmp_path):
    separate.copy_to(str(tmp_path))
    os.remove(str(tmp_path / "target.model"))
    with pytest.raises(FileNotFoundError, match="source.model and target.model"):
        Tokenizer.load(str(tmp_path))


# ---- Familiarity: the "unfamiliar" flag (issue 12).

OUT_OF_DOMAIN = ["Hello", "How are you?", "Thank you very much.", "What is your name?",
                 "The file could not be opened.", "Error: connection refused",
                 "Please restart the server.", "Segmentation fault (core dumped)",
                 "Do you speak English?", "Invalid username or password."]


def test_familiarity_is_calibrated_on_dev(tiny_data):
    tokenizer = Tokenizer.load(tiny_data.data_dir)
    with open(tiny_data.raw_text["dev"][0], encoding="utf-8") as f:
        dev = f.read().splitlines()
    flagged = [source for source in dev if tokenizer.is_unfamiliar(tokenizer.encode_source(source))]
    assert len(flagged) <= 0.05 * len(dev)
    assert 0 < tokenizer.options["familiarity"]["threshold"] < float("inf")


def test_what_people_type_is_familiar_and_other_text_is_not(tiny_data):
    # The kinds of bench/demo_probe.py (issue 19): at most 5% of each flagged, 80% of its
    # out-of-domain sentences flagged; the tiny corpus has 2,000 pairs.
    tokenizer, rng = Tokenizer.load(tiny_data.data_dir), random.Random(19)
    unfamiliar = lambda text: tokenizer.is_unfamiliar(tokenizer.encode_source(text))  # noqa: E731
    kinds = {"names": demo_probe.names_cases(), "numbers": demo_probe.number_cases(rng, 200),
             "dates": demo_probe.date_cases(rng, 180), "times": demo_probe.time_cases(rng, 80),
             "amounts": demo_probe.amount_cases(rng, 100)}
    for kind, cases in kinds.items():
        flagged = [english for english, _ in cases if unfamiliar(english)]
        assert len(flagged) <= 0.05 * len(cases), (kind, flagged)
    assert not any(unfamiliar(text) for text in ["twenty one", "Monday", "the first of May", "May 1", "$5", "3 pm"])
    flagged = [text for text in demo_probe.OUT_OF_DOMAIN if unfamiliar(text)]
    assert len(flagged) >= 0.8 * len(demo_probe.OUT_OF_DOMAIN)


def test_the_threshold_flags_at_most_the_share_of_each_calibration_set(pairs, corpus, tmp_path):
    by_family = collections.defaultdict(list)
    for example in corpus.train:
        by_family[example.family].append(example.source)
    calibration = list(by_family.values())
    tokenizer = train_tokenizer(pairs, str(tmp_path), 200, "unigram", joint=True, lowercase_source=True,
                                calibration=calibration + [[]])
    scores = [[tokenizer.unfamiliarity(tokenizer.encode_source(source)) for source in group]
              for group in calibration]
    threshold = tokenizer.options["familiarity"]["threshold"]
    for group in scores:
        assert sum(score > threshold for score in group) <= FLAGGED_SHARE * len(group)
    # The smallest such threshold: one set would flag more with the next lower score.
    assert any(sum(score >= threshold for score in group) > FLAGGED_SHARE * len(group) for group in scores)


def test_too_few_calibration_sources_turn_the_flag_off(pairs, tmp_path):
    """Below MIN_CALIBRATION sources the threshold would be their highest score, flagging about
    1 in (count + 1) sources like them: no flag rather than a wrong one."""
    sources = [source for source, _ in pairs[200:]]
    for count, calibrated in ((MIN_CALIBRATION - 1, False), (MIN_CALIBRATION, True)):
        tokenizer = train_tokenizer(pairs[:200], str(tmp_path / str(count)), 200, "unigram",
                                    joint=True, calibration=[sources[:count]])
        assert ("familiarity" in tokenizer.options) == calibrated
        assert tokenizer.is_unfamiliar([UNK_ID]) == calibrated  # flagged only with a model


def test_a_score_is_the_mean_cost_of_the_pieces_and_of_prior_pieces():
    sources = [[5, 6, 7], [5, 8], [9], [5, 6, 7, 8, 9], [6, 7]]
    familiarity = _Familiarity(json.loads(json.dumps(_Familiarity.fit(sources).data)))  # as tokenizer.json
    assert familiarity.prior_pieces == PRIOR_PIECES == 2
    costs = [familiarity.cost(previous, piece) for previous, piece in [(BOS_ID, 6), (6, 7), (7, EOS_ID)]]
    assert familiarity.score([6, 7]) == pytest.approx((sum(costs) + 2 * familiarity.prior) / 5)
    # The prior is the training sources' mean cost per piece (their end included).
    plain = _Familiarity(dict(familiarity.data, prior_pieces=0))
    assert plain.score([6, 7]) == pytest.approx(sum(costs) / 3)
    total = sum(plain.score(ids) * (len(ids) + 1) for ids in sources)
    assert familiarity.prior == pytest.approx(total / sum(len(ids) + 1 for ids in sources))
    # A short source is pulled towards the prior; an unseen piece costs more than a seen one.
    assert familiarity.score([9]) < plain.score([9]) and familiarity.score([9]) > familiarity.prior
    assert familiarity.cost(BOS_ID, 42) > familiarity.cost(BOS_ID, 9) > familiarity.cost(BOS_ID, 5)
    # A tokenizer.json of before the prior (FORMAT_VERSION 4) keeps the plain mean it was calibrated with.
    old = _Familiarity({key: value for key, value in familiarity.data.items() if "prior" not in key})
    assert old.score([6, 7]) == plain.score([6, 7])


def test_out_of_domain_sources_are_flagged_and_variants_are_not(tiny_data):
    tokenizer = Tokenizer.load(tiny_data.data_dir)
    assert all(tokenizer.is_unfamiliar(tokenizer.encode_source(text)) for text in OUT_OF_DOMAIN)
    for text in ["日本語のテキストです", "Привет", "😀"]:  # <unk> and little else
        ids = tokenizer.encode_source(text)
        assert UNK_ID in ids and tokenizer.is_unfamiliar(ids), text
    with open(tiny_data.raw_text["test"][0], encoding="utf-8") as f:
        sentences = [line for line in f.read().splitlines() if line[-1:] == "." and line[:1].isupper()]
    # Small changes people make: no final period, a lower-case first letter.
    for variant in [sentences[0][:-1], sentences[1][:1].lower() + sentences[1][1:]]:
        assert not tokenizer.is_unfamiliar(tokenizer.encode_source(variant)), variant
    # Padding, BOS and EOS do not change the score.
    ids = tokenizer.encode_source(sentences[2])
    assert tokenizer.unfamiliarity([BOS_ID] + ids + [EOS_ID, PAD_ID]) == tokenizer.unfamiliarity(ids)


def test_a_directory_without_tokenizer_json_is_never_unfamiliar(tiny_data, tmp_path):
    shutil.copyfile(os.path.join(tiny_data.data_dir, "spm.model"), str(tmp_path / "spm.model"))
    tokenizer = Tokenizer.load(str(tmp_path))
    assert tokenizer.model_files == [str(tmp_path / "spm.model")]
    assert not tokenizer.is_unfamiliar(tokenizer.encode_source("Segmentation fault (core dumped)"))
    assert tokenizer.encode_source("MONDAY") != tokenizer.encode_source("monday")


def test_pieces_and_lower_case_source(pairs, tmp_path):
    tokenizer = train_tokenizer(pairs, str(tmp_path), 200, "unigram", joint=True, lowercase_source=True,
                                calibration=[[source for source, _ in pairs[:50]]])
    assert tokenizer.encode_source("MONDAY, May 1") == tokenizer.encode_source("monday, may 1")
    assert tokenizer.encode_target("Maio") != tokenizer.encode_target("maio")  # targets keep their case
    ids = tokenizer.encode_source("two red cars")
    pieces = tokenizer.source_pieces(ids + [EOS_ID])
    assert "".join(pieces[:-1]).replace("\u2581", " ").strip() == "two red cars" and pieces[-1] == "</s>"
    target = tokenizer.encode_target("os dois carros")
    assert "".join(tokenizer.target_pieces(target)).replace("\u2581", " ").strip() == "os dois carros"
    assert Tokenizer.load(str(tmp_path)).options["lowercase_source"] is True

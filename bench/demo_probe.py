"""Probes the demo model with what people type (issue 12): names, numbers, dates, times and
amounts written their way, held-out sentences with one small change, and sentences from
outside the domain, which should be flagged unfamiliar.

    .venv/bin/python bench/demo_probe.py --model_dir runs/default [--json bench/out/demo_probe.json]

Expected translations are built here, independently of data_pipeline/embedded.py: numbers
with num2words on both sides, names from the hand-written tables below, dates, times and
amounts by hand rules. A variant of a held-out sentence is right when its translation equals
the original's. Every comparison ignores case and final punctuation.
"""

import argparse
import datetime
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from num2words import num2words  # noqa: E402

from bench import harness  # noqa: E402

WEEKDAYS = {"Monday": "segunda-feira", "Tuesday": "terça-feira", "Wednesday": "quarta-feira",
            "Thursday": "quinta-feira", "Friday": "sexta-feira", "Saturday": "sábado",
            "Sunday": "domingo"}
MONTHS = {"January": "janeiro", "February": "fevereiro", "March": "março", "April": "abril",
          "May": "maio", "June": "junho", "July": "julho", "August": "agosto",
          "September": "setembro", "October": "outubro", "November": "novembro",
          "December": "dezembro"}
# English singular, plural -> Portuguese singular, plural (masculine currencies only).
CURRENCIES = {("US dollar", "US dollars"): ("dólar americano", "dólares americanos"),
              ("euro", "euros"): ("euro", "euros"),
              ("Brazilian real", "Brazilian reals"): ("real brasileiro", "reais brasileiros")}
SYMBOLS = {"$": "US$ ", "€": "€ ", "R$": "R$ "}
OUT_OF_DOMAIN = [
    # greetings and everyday sentences
    "Hello", "Hi there!", "Good morning", "Good night", "How are you?", "Thank you very much.",
    "Thanks", "Yes", "No", "Please", "Sorry", "Nice to meet you.", "What is your name?",
    "My name is Anna.", "I love you.", "See you tomorrow!", "Can you help me?", "I am hungry.",
    "I like coffee.", "The weather is nice today.", "It is raining.", "Let's go to the beach.",
    "Do you speak English?", "Where is the train station?", "The dog is sleeping.",
    "My mother is a teacher.", "I don't understand.", "How much is it?", "Happy birthday!",
    "What time is it?", "I live in London.", "She reads a lot of books.",
    "We are going to the cinema tonight.", "Could you repeat that, please?", "I have two brothers.",
    "The children are playing in the garden.", "He works at the hospital.", "Welcome!",
    # technical messages
    "File not found", "The file could not be opened.", "Error: connection refused",
    "Please restart the server.", "Segmentation fault (core dumped)", "Press any key to continue",
    "Invalid username or password.", "404 Not Found", "Click here to continue.",
    "Are you sure you want to delete this file?", "Saving changes...", "Permission denied",
    "Update available", "Your session has expired.", "Enter your email address",
    "Unable to connect to the database.", "Download complete", "Show hidden files",
    "The operation was cancelled.", "Check your internet connection.", "Out of memory",
    "Undo", "Settings", "Open in new window",
]


def norm(text):
    """Compared text: lower case, without final punctuation, single spaces."""
    return " ".join(text.lower().rstrip(" .?!").split())


def pt_number(number):
    return num2words(number, lang="pt_BR").replace(",", "")


def english_words(number, rng):
    """A number in words the way people write it: "and" or not, hyphen or space, capitals."""
    words = num2words(number, lang="en").replace(",", "")
    if rng.random() < 0.5:
        words = words.replace(" and ", " ")
    if rng.random() < 0.3:
        words = words.replace("-", " ")
    if rng.random() < 0.3:
        words = words[:1].upper() + words[1:]
    return words


def digits_pt(number):
    return "{:,}".format(number).replace(",", ".")


def names_cases():
    cases = []
    for table in (WEEKDAYS, MONTHS):
        for english, portuguese in table.items():
            cases += [(english, portuguese), (english.lower(), portuguese)]
    return cases


def number_cases(rng, count):
    cases = []
    for index in range(count):
        number = rng.randint(0, 100) if index % 2 else rng.randint(101, 999999)
        if index % 4 == 3:
            english = "{:,}".format(number) if rng.random() < 0.5 else str(number)
            cases.append((english, digits_pt(number)))
        else:
            cases.append((english_words(number, rng), pt_number(number)))
    return cases


def ordinal_suffix(day):
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return "%d%s" % (day, suffix)


def date_cases(rng, count):
    cases, months, days = [], list(MONTHS), list(WEEKDAYS)
    for index in range(count):
        date = datetime.date(rng.randint(1950, 2049), rng.randint(1, 12), rng.randint(1, 28))
        month, day, year = months[date.month - 1], date.day, date.year
        day_pt = "1º" if day == 1 else str(day)
        short = "%s de %s" % (day_pt, MONTHS[month])
        full = "%s de %d" % (short, year)
        cases.append([
            ("%s %d" % (month, day), short),
            ("%s %d, %d" % (month, day, year), full),
            ("%s %s" % (month, ordinal_suffix(day)), short),
            ("the %s of %s" % (ordinal_suffix(day), month), short),
            ("the %s of %s" % (num2words(day, lang="en", to="ordinal"), month), short),
            ("%d %s %d" % (day, month, year), full),
            ("%d/%d/%d" % (date.month, day, year), "%02d/%02d/%d" % (day, date.month, year)),
            ("%s, %s %d, %d" % (days[date.weekday()], month, day, year),
             "%s, %s" % (WEEKDAYS[days[date.weekday()]], full)),
            ("%s %d" % (month, year), "%s de %d" % (MONTHS[month], year)),
        ][index % 9])
    return cases


def time_cases(rng, count):
    cases = []
    for index in range(count):
        hour, minute = rng.randrange(24), rng.choice([0, rng.randrange(60)])
        clock, half = hour % 12 or 12, "AM" if hour < 12 else "PM"
        half_lower = half.lower()
        english = ["%d:%02d %s" % (clock, minute, half), "%d:%02d%s" % (clock, minute, half_lower),
                   "%d:%02d %s" % (clock, minute, half_lower) if minute else
                   "%d %s" % (clock, half_lower), "%d:%02d" % (hour, minute)][index % 4]
        cases.append((english, "%02d:%02d" % (hour, minute)))
    return cases


def amount_cases(rng, count):
    cases = []
    for index in range(count):
        units, cents = rng.randint(2, 9999), rng.randint(1, 99)
        (english_one, english_many), (pt_one, pt_many) = rng.choice(list(CURRENCIES.items()))
        symbol = rng.choice(list(SYMBOLS))
        english_units, pt_units = "{:,}".format(units), SYMBOLS[symbol] + digits_pt(units)
        form = index % 5
        if form == 0:
            cases.append((symbol + english_units, pt_units))
        elif form == 1:
            cases.append(("%s%s.%02d" % (symbol, english_units, cents),
                          "%s,%02d" % (pt_units, cents)))
        elif form == 2:
            cases.append(("%d %s" % (units, english_many), "%d %s" % (units, pt_many)))
        elif form == 3:
            cases.append(("%s %s" % (english_words(units, rng), english_many),
                          "%s %s" % (pt_number(units), pt_many)))
        else:
            cases.append(("It costs %s%s." % (symbol, english_units), "Custa %s." % pt_units))
    return cases


def variants(sentence, rng):
    """One natural change of a held-out sentence, or None if none applies."""
    changes = []
    if sentence[:1].isupper():
        changes.append(sentence[:1].lower() + sentence[1:])
    if sentence[-1:] in ".?":
        changes.append(sentence[:-1])
    if re.search(r"[a-z]-[a-z]", sentence):
        changes.append(re.sub(r"(?<=[a-z])-(?=[a-z])", " ", sentence))
    with_and = re.sub(r"\bhundred (?=(one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
                      r"twelve|\w+teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)\b)",
                      "hundred and ", sentence)
    if with_and != sentence:
        changes.append(with_and)
    return rng.choice(changes) if changes else None


def percent(count, total):
    return "%5.1f%%" % (100.0 * count / total)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", default="runs/default")
    parser.add_argument("--data_dir", default="data/default",
                        help="its test.src/test.tgt are the held-out sentences")
    parser.add_argument("--decoder", default="while_loop")
    parser.add_argument("--beam_width", type=int, default=5)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--json", default="", help="write the figures and every miss here")
    parser.add_argument("--show", type=int, default=5, help="misses printed per kind")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    test_sources, test_targets = (harness.read_sentences(os.path.join(args.data_dir, name))
                                  for name in ("test.src", "test.tgt"))
    kinds = {"names": names_cases(), "numbers": number_cases(rng, 200),
             "dates": date_cases(rng, 180), "times": time_cases(rng, 80),
             "amounts": amount_cases(rng, 100)}
    originals = rng.sample(range(len(test_sources)), min(300, len(test_sources)))
    pairs = [(test_sources[i], variants(test_sources[i], rng)) for i in originals]
    pairs = [(original, variant) for original, variant in pairs if variant]
    translator = harness.translator(args.model_dir)

    def translate(texts):
        return translator.translate(texts, args.decoder, args.beam_width, 1)

    # A variant is right when it translates as its original does.
    kinds["variants"] = [(variant, result.text) for (_, variant), result
                         in zip(pairs, translate([original for original, _ in pairs]))]
    report, misses, flagged = {}, {}, {}
    for kind, cases in kinds.items():
        results = translate([english for english, _ in cases])
        misses[kind] = [(english, expected, result.text)
                        for (english, expected), result in zip(cases, results)
                        if norm(result.text) != norm(expected)]
        misses[kind + "_flagged"] = [english for (english, _), result in zip(cases, results)
                                     if result.unfamiliar]
        report[kind] = (len(cases) - len(misses[kind]), len(cases))
        flagged[kind] = (len(misses[kind + "_flagged"]), len(cases))
    test_results = translate(test_sources)
    exact = sum(result.text == target for result, target in zip(test_results, test_targets))
    ood = translate(OUT_OF_DOMAIN)
    flagged.update(out_of_domain=(sum(r.unfamiliar for r in ood), len(ood)),
                   test_split=(sum(r.unfamiliar for r in test_results), len(test_results)))
    misses["out_of_domain_not_flagged"] = [text for text, result in zip(OUT_OF_DOMAIN, ood)
                                           if not result.unfamiliar]
    print("model %s (step %s), %s beam %d"
          % (args.model_dir, translator.step, args.decoder, args.beam_width))
    for kind, (right, total) in report.items():
        print("%-10s %4d / %4d right  %s   flagged unfamiliar %s"
              % (kind, right, total, percent(right, total), percent(flagged[kind][0], total)))
        for miss in misses[kind][:args.show]:
            print("    miss: %s" % " | ".join(miss))
        if misses[kind + "_flagged"]:
            print("    flagged: %s" % "; ".join(misses[kind + "_flagged"][:args.show]))
    print("test split exact match %d / %d  %s"
          % (exact, len(test_targets), percent(exact, len(test_targets))))
    for name in ("out_of_domain", "test_split"):
        count, total = flagged[name]
        print("flagged unfamiliar: %-14s %4d / %4d  %s"
              % (name, count, total, percent(count, total)))
    print("    not flagged: %s" % "; ".join(misses["out_of_domain_not_flagged"]))
    harness.write_json(args.json, {"right": report, "test_exact": [exact, len(test_targets)],
                                   "flagged": flagged, "misses": misses}, ensure_ascii=False)
    translator.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Prompt-lookup speculative decoding (--lookup) against plain decoding on the same prompts:
`zerfoo generate` greedy, alternating plain and --lookup runs, best of --runs each; prints decode
tok/s, the ratio, and the drafted / accepted tokens. The answers must be identical (checked).

  python3 bench/lookup_bench.py --zerfoo build/zerfoo -m MODEL.gguf [--runs 3] [-n 128] [-t 2]

Prompts: three that make the answer repeat the prompt (a code edit, quote extraction, JSON
reformatting), where lookup drafts pay off, and an open-ended one, where drafting should turn
itself off (no more than a few percent slower). Standard library only; not a test.
"""
import argparse
import json
import os
import subprocess
import sys

CODE = '''def total_price(items, tax_rate, discount):
    subtotal = 0
    for item in items:
        subtotal += item["price"] * item["quantity"]
    taxed = subtotal * (1 + tax_rate)
    if discount > taxed:
        raise ValueError("discount larger than the price")
    return round(taxed - discount, 2)
'''
QUOTE = ("The board said in its statement on Monday that \"the merger will close in the third quarter, "
         "subject to regulatory approval in both markets\", and added that \"no jobs will be cut at the "
         "Leeds and Porto sites before the end of next year\".")
JSON_IN = ('{"name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "computing"], '
           '"notes": {"known_for": "the first published algorithm", "collaborator": "Charles Babbage"}}')
PROMPTS = [
    ("code edit", "Here is a Python function:\n\n" + CODE + "\nThe same function with type hints added:\n\n"),
    ("quote extraction", "Text: " + QUOTE + "\n\nThe two direct quotes in the text, verbatim:\n1."),
    ("JSON reformat", "Compact JSON:\n" + JSON_IN + "\n\nThe same JSON, pretty-printed with 2-space indentation:\n"),
    ("open-ended", "Write a short story about a lighthouse keeper who finds a strange bottle on the beach.\n\n"),
]


def run(a, prompt, lookup):
    cmd = [a.zerfoo, "generate", "-m", a.model, "-p", prompt, "--temp", "0", "-n", str(a.n), "-t", str(a.threads),
           "--ignore-eos", "--json"] + (["--lookup"] if lookup else [])
    out = subprocess.run(cmd, capture_output=True, check=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zerfoo", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | sed 's/.*: *//'"], capture_output=True,
                         text=True).stdout.strip()
    print("# %s, %d threads, load %s, %s" % (cpu, a.threads, os.getloadavg(), os.path.basename(a.model)))
    print("| prompt | plain tok/s | --lookup tok/s | speed-up | drafted | accepted |")
    print("|---|---|---|---|---|---|")
    for name, prompt in PROMPTS:
        best = {False: None, True: None}
        for _ in range(a.runs):
            for lookup in (False, True):
                r = run(a, prompt, lookup)
                if best[lookup] is None or r["decode_tok_s"] > best[lookup]["decode_tok_s"]:
                    best[lookup] = r
        plain, spec = best[False], best[True]
        if plain["text"] != spec["text"]:
            sys.exit("%s: --lookup changed the answer" % name)
        print("| %s | %.1f | %.1f | %.2fx | %d | %d |" % (name, plain["decode_tok_s"], spec["decode_tok_s"],
                                                           spec["decode_tok_s"] / plain["decode_tok_s"],
                                                           spec["drafted_tokens"], spec["accepted_tokens"]))


if __name__ == "__main__":
    main()

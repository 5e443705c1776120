#!/usr/bin/env python3
"""Prompt-lookup speculative decoding (--lookup) against plain decoding on the same prompts:
`zerfoo generate` greedy, alternating plain and --lookup runs, best of --runs each; prints decode
tok/s, the ratio, and the drafted / accepted tokens. The answers must be identical (checked).

  python3 bench/lookup_bench.py --zerfoo build/zerfoo -m MODEL.gguf [--runs 3] [-n 128] [-t 2]

With --draft DRAFT.gguf the speculative runs use that draft model (-md) instead of --lookup
(e.g. a Q8_0 target and its own Q4 file, bench/requant_q8_0.py). With --llama-bin DIR
(scripts/reference/build_llama_cpp.sh speculative) llama.cpp runs the same files, prompts and
length too, alternating with the others: llama-completion plain and llama-speculative (with
--draft) or llama-lookup (without); its decode speeds, speed-up and acceptance are printed
alongside.

Prompts: three that make the answer repeat the prompt (a code edit, quote extraction, JSON
reformatting), where lookup drafts pay off, and an open-ended one, where drafting should turn
itself off (no more than a few percent slower). Standard library only; not a test.
"""
import argparse
import json
import os
import re
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


def run(a, prompt, speculate):
    spec = (["-md", a.draft] if a.draft else ["--lookup"]) if speculate else []
    cmd = [a.zerfoo, "generate", "-m", a.model, "-p", prompt, "--temp", "0", "-n", str(a.n), "-t", str(a.threads),
           "--ignore-eos", "--json"] + spec
    out = subprocess.run(cmd, capture_output=True, check=True, text=True).stdout
    return json.loads(out)


def llama_speculative_run(a, prompt):
    """llama.cpp's own speculative run on the same files: llama-speculative with the draft model,
    or llama-lookup (prompt lookup) without one. Decode speed (tok/s) and acceptance (0..1) from
    its summary lines."""
    if a.draft:
        cmd = [os.path.join(a.llama_bin, "llama-speculative"), "-m", a.model, "-md", a.draft, "-td", str(a.threads),
               "-ngld", "0"]
    else:
        cmd = [os.path.join(a.llama_bin, "llama-lookup"), "-m", a.model]
    cmd += ["-p", prompt, "--temp", "0", "-n", str(a.n), "-t", str(a.threads), "--spec-draft-n-max", "8", "-ngl", "0",
            "--ignore-eos"]
    err = subprocess.run(cmd, capture_output=True, text=True).stderr
    speed = re.search(r"decoded\s+\d+\s+tokens in\s+[\d.]+\s+seconds, speed:\s+([\d.]+)", err)
    accept = re.search(r"accept\s*=\s*([\d.]+)%", err)
    if not speed or not accept:
        sys.exit("%s: no summary in its output:\n%s" % (cmd[0], err[-2000:]))
    return float(speed.group(1)), float(accept.group(1)) / 100.0


def llama_plain_run(a, prompt):
    """llama-completion's greedy decode speed (tok/s) on the same prompt and length."""
    cmd = [os.path.join(a.llama_bin, "llama-completion"), "-m", a.model, "-p", prompt, "--temp", "0", "-n", str(a.n),
           "-t", str(a.threads), "-ngl", "0", "--ignore-eos", "-no-cnv"]
    err = subprocess.run(cmd, capture_output=True, text=True).stderr
    m = re.search(r"eval time =\s+[\d.]+ ms /\s+\d+ runs\s+\(\s*[\d.]+ ms per token,\s+([\d.]+) tokens per second\)",
                  err)
    if not m:
        sys.exit("llama-completion: no timings in its output:\n" + err[-2000:])
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zerfoo", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--draft", help="draft model for the speculative runs (-md) instead of --lookup")
    ap.add_argument("--llama-bin", help="llama.cpp's bin directory (scripts/reference/build_llama_cpp.sh speculative): "
                                        "llama-completion plain and llama-speculative (--draft) or llama-lookup "
                                        "run alternately with the same files, prompts and length")
    a = ap.parse_args()
    mode = "-md " + os.path.basename(a.draft) if a.draft else "--lookup"
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | sed 's/.*: *//'"], capture_output=True,
                         text=True).stdout.strip()
    print("# %s, %d threads, load %s, %s" % (cpu, a.threads, os.getloadavg(), os.path.basename(a.model)))
    llama_mode = "llama-speculative" if a.draft else "llama-lookup"
    llama_cols = (" llama.cpp plain tok/s | %s tok/s | its speed-up | its acceptance |" % llama_mode) if a.llama_bin else ""
    print("| prompt | plain tok/s | %s tok/s | speed-up | drafted | accepted |%s" % (mode, llama_cols))
    print("|---|---|---|---|---|---|" + ("---|---|---|---|" if a.llama_bin else ""))
    for name, prompt in PROMPTS:
        best = {False: None, True: None}
        llama, llama_plain = None, None
        for _ in range(a.runs):
            for speculate in (False, True):
                r = run(a, prompt, speculate)
                if best[speculate] is None or r["decode_tok_s"] > best[speculate]["decode_tok_s"]:
                    best[speculate] = r
            if a.llama_bin:
                llama_plain = max(llama_plain or 0.0, llama_plain_run(a, prompt))
                s, acc = llama_speculative_run(a, prompt)
                if llama is None or s > llama[0]:
                    llama = (s, acc)
        plain, spec = best[False], best[True]
        if plain["text"] != spec["text"]:
            sys.exit("%s: %s changed the answer" % (name, mode))
        extra = ""
        if llama:
            extra = " %.1f | %.1f | %.2fx | %.2f |" % (llama_plain, llama[0], llama[0] / llama_plain, llama[1])
        print("| %s | %.1f | %.1f | %.2fx | %d | %d |%s" % (name, plain["decode_tok_s"], spec["decode_tok_s"],
                                                             spec["decode_tok_s"] / plain["decode_tok_s"],
                                                             spec["drafted_tokens"], spec["accepted_tokens"], extra))


if __name__ == "__main__":
    main()

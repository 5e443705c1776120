#!/usr/bin/env python3
"""Expected pre-tokenizer splits (tests/data/pretokenize/vectors.json) computed with Python's `regex`.

For each tokenizer.ggml.pre value the reference applies a list of regexes in turn; each regex
splits every current segment into its matches and the text between them (nothing dropped).
  pip install regex && python3 scripts/gen_pretokenize_vectors.py > tests/data/pretokenize/vectors.json
"""
import json
import random

import regex

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|"
          r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
PRES = {
    "gpt-2": [GPT2],
    "llama3": [LLAMA3],
    "qwen2": [QWEN2],
    "smollm": [r"\p{N}", GPT2],
    "deepseek-coder": ["[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[一-龥ࠀ-一가-퟿]+", r"\p{N}"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
    "poro-chat": [r" ?[^(\s|.,!?…。，、।۔،)]+"],
}
FIXED = [
    "", " ", "Hello world", " Hello  world ", "don't stop I'LL WE'VE they're 'tis",
    "  multiple   spaces \n\n\t x", "1234567 12 3.14159 -42", "Hello,world!! (ok) [x] {y}",
    "café naïve résumé", "日本語のテキスト 한국어", "emoji 🦙🚀 end", "\r\n\r\nlines\r\n",
    "tabs\tand\u00a0nbsp", "a\n\nb\n \n c", "x=1+2^3~4|5`6$7<8>9", "...!!!???", "'s'S'll",
]
ALPHABET = list("abcXYZ019 \t\n\r.,!?'-_$+<=>^~|`()[]{}") + ["é", "ß", "Ж", "日", "한", "🦙", "\u0301",
                                                              "٣", "\u00a0", "…", "。"]


def split(exprs, text):
    segs = [text]
    for e in exprs:
        out = []
        for s in segs:
            pos = 0
            for m in regex.finditer(e, s):
                if m.end() == m.start():
                    continue
                if m.start() > pos:
                    out.append(s[pos:m.start()])
                out.append(m.group())
                pos = m.end()
            if pos < len(s):
                out.append(s[pos:])
        segs = out
    return segs


def main():
    rng = random.Random(1)
    texts = FIXED + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 60)))
                     for _ in range(60)]
    out = []
    for pre, exprs in PRES.items():
        for t in texts:
            out.append({"pre": pre, "text": t, "words": split(exprs, t)})
    print(json.dumps(out, ensure_ascii=False, indent=0))


if __name__ == "__main__":
    main()

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
QWEN35 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|"
          r"\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRES = {
    "gpt-2": [GPT2],
    "llama3": [LLAMA3],
    "qwen2": [QWEN2],
    "smollm": [r"\p{N}", GPT2],
    "deepseek-llm": ["[\r\n]",
                     "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+",
                     "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", "\\s+$",
                     "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", "\\p{N}+"],
    "deepseek-coder": ["[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[一-龥ࠀ-一가-퟿]+", r"\p{N}"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
    "poro-chat": [r" ?[^(\s|.,!?…。，、।۔،)]+"],
    "qwen35": [QWEN35],
    "gemma4": [r"[^\n]+|[\n]+"],
}
FIXED = [
    "", " ", "Hello world", " Hello  world ", "don't stop I'LL WE'VE they're 'tis",
    "  multiple   spaces \n\n\t x", "1234567 12 3.14159 -42", "Hello,world!! (ok) [x] {y}",
    "café naïve résumé", "日本語のテキスト 한국어", "emoji 🦙🚀 end", "\r\n\r\nlines\r\n",
    "tabs\tand\u00a0nbsp", "a\n\nb\n \n c", "x=1+2^3~4|5`6$7<8>9", "...!!!???", "'s'S'll",
    "e\u0301t\u00e9 \u0301x a\u0300\u0301 \u0915\u093f\u0924\u093e\u092c !\u0301?", "\n\n a\n \n\nb ",
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

#!/usr/bin/env python3
"""Writes tests/data/regex/split_vectors.txt (checked by tests/unit/regex_split_test.cpp).

Expected splits come from Python's `regex` package (pip install regex), independently of our C++
engine (src/tokenizer/regex_split.cpp). The pattern lists are the pre-tokenizer regexes of the
reference (llama.cpp src/llama-vocab.cpp, `regex_exprs`), applied like its unicode_regex_split():
start with the whole text as one segment; for each regex in turn, split every current segment on
its own (the regex sees only that segment); matches and the text around them all become segments.

Known differences between `regex` and our engine that the corpus avoids:
  * \\s: `regex` also counts U+001C..U+001F as whitespace; our \\s is the White_Space property
    (same as the reference's unicode flags). The corpus has none of those codepoints, and every
    codepoint used is checked to have the same \\s / \\p{L,N,P,S,M} answer under both.
  * `$`: `regex` also matches before a final '\\n'; ours (like the reference's std::regex) only
    at the end. In the lists below `$` only appears after "[\\r\\n]" has isolated every newline,
    where both agree.
  * Unassigned codepoints (tables of different Unicode versions) are not used.
  * (?i:...): `regex` uses full case folding ("'\u017f" matches (?i:'s)); ours and the
    reference's compare simple lowercase mappings. U+017F is not used.
  * `regex` quirk: a scoped (?i:...) also makes sibling classes case-insensitive
    ("[^ab]|(?i:x)" does not match "A"; the stdlib `re` and ours do). The lists below only
    have caseless classes next to (?i:...), so it does not matter here.

File format (UTF-8 text, one record per line; in payloads every codepoint below U+0021, '%',
U+007F..U+00A0, other whitespace and format characters, and in `re` lines every non-ASCII
codepoint, is written %{HEX}):
  list <name>                 starts a pattern list
  re <pattern>                appends a regex to the current list
  text <text>                 a corpus string
  split <name> <len> <len>... segment lengths (codepoints) of that text under that list
Run: python3 scripts/gen_regex_vectors.py   (deterministic; seed fixed)
"""
import os
import random
import unicodedata

import regex

OUT_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "regex"))

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|"
          r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_ORIG = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|"
         r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

LISTS = {
    "gpt2": [GPT2],  # also mpt, olmo, phi-2
    "llama3": [LLAMA3],
    "llama3-orig": [LLAMA3_ORIG],
    "qwen2": [QWEN2],
    "smollm": [r"\p{N}", GPT2],  # also starcoder, refact
    # Non-ASCII written as escapes: the reference's ranges contain singletons that Unicode
    # normalization would change (U+1F7D, U+1FBE, U+1FD3, U+1FDB, U+2126, U+212A), which would
    # turn "\u1f5f-\u1f7d" into an invalid range.
    "deepseek-llm": [
        "[\r\n]",  # literal CR and LF, as in the reference
        "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293"
        "\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c"
        "\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5"
        "\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
        "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59"
        "\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc"
        "\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
        "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
        "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
        "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e"
        "\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a"
        "\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2"
        "\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+",
        "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
        "\\s+$",
        "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
        "\\p{N}+",
    ],
    "deepseek-coder": [
        "[\r\n]",
        "\\s?\\p{L}+",
        "\\s?\\p{P}+",
        "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
        "\\p{N}",
    ],
    "falcon": [
        r"[\p{P}\$\+<=>\^~\|`]+",
        GPT2,
        "[0-9][0-9][0-9]",
    ],
}

FIXED = [
    "",
    "a",
    " ",
    "Hello world",
    "Hello, world! How's it going? I'm fine, you'll see; they've gone, we'd go, it's OK.",
    "DON'T SHOUT: I'M HERE, YOU'RE THERE, WE'VE WON, SHE'LL GO, HE'D SAY, IT'S 'S 'T",
    "'s 't 're 've 'm 'll 'd 'x ' 'S 'Re 'rE 'LL",
    "  multiple   spaces ",
    "\n\n\t x",
    "line1\nline2\r\nline3\r\r\n\n  \n\t\n",
    "   leading and trailing   ",
    "\t\ttabs\tand\t\tmore\t",
    "1234567 12",
    "1 12 123 1234 12345 123456 1234567890123",
    "3.14159, -42, +7, 1e10, 0x1F, 2^10, 100%",
    "!!!??? ... --- *** ### $$$ ((())) [[]] {{}} <<>> ||| ~~~ ``` ^^^ ===",
    "a!b?c.d,e;f:g",
    "Hello,world!!",
    "café naïve résumé Zoë façade déjà-vu",
    "cafe\u0301 nai\u0308ve e\u0301\u0301\u0301",
    "你好，世界！我们今天去北京。",
    "日本語のテキストです。カタカナとひらがな。",
    "안녕하세요 세계! 한국어 텍스트입니다.",
    "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 ❤️ 🇺🇸 done",
    "مرحبا بالعالم! هذا نص عربي ١٢٣٤٥",
    "नमस्ते दुनिया। यह हिंदी पाठ है।",
    "Привет, мир! Ελληνικά κείμενο.",
    "µ K Ω ℃ ™ © ® ½ ² ³ ¼ Ⅻ ① ⑩",
    "ＡＢＣ ａｂｃ １２３ ！？　。「」『』",
    "“quoted” ‘single’ — dash – en … ellipsis",
    "non\u00a0breaking\u00a0space and\u3000ideographic\u2028line\u2029para",
    "\u2003em\u2009thin\u200awords\u202fnarrow\u205fmath",
    "    \n    code()\n        return x  \n\n\n",
    "def foo(bar: int) -> str:\n    return f\"{bar!r}\"  # comment\n",
    "<html><body class=\"x\">&amp; &lt;</body></html>",
    "path/to/file.txt C:\\Windows\\System32 https://example.com/a?b=c&d=e#f",
    "user@example.com @handle #hashtag $100 €50 £30 ¥20",
    "x     ",
    "     x",
    "\n",
    "\r\n",
    " \n ",
    "\t",
    "  ",
    "a  b   c    d",
    "...\n\n...",
    "'",
    "''''",
    "abc'def'ghi",
    "I'll've y'all'd",
    "12:34:56 2024-01-01T00:00:00Z",
    "ΑΒΓ αβγ ΣΊΣΥΦΟΣ ﬀ ﬁ ß ẞ İ ı",
    "\u0300\u0301 leading marks \u0308x",
    "tab\t\tthen\n\nnewline \t\n mixed \r\n\t end",
]

# Pools for random mixes. Every codepoint is checked below.
POOLS = [
    ("ascii_lower", [chr(c) for c in range(ord("a"), ord("z") + 1)], 10),
    ("ascii_upper", [chr(c) for c in range(ord("A"), ord("Z") + 1)], 4),
    ("digits", list("0123456789"), 4),
    ("ascii_punct", list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), 5),
    ("space", [" "], 8),
    ("ws", ["\t", "\n", "\r", "\u000b", "\u000c", "\u00a0", "\u3000", "\u2003", "\u2028"], 3),
    ("contraction", ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'RE", "'Ll"], 2),
    ("latin1", list("àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿÀÉÖÜßµ"), 3),
    ("marks", ["\u0300", "\u0301", "\u0308", "\u0327", "\u093f", "\u094d", "\u05b7"], 1),
    ("cjk", list("你好世界中文字符测试一二三龥"), 3),
    ("kana", list("あいうえおカタナ"), 1),
    ("hangul", list("안녕하세요한국어"), 2),
    ("emoji", ["😀", "👍", "🏽", "\u200d", "❤", "\ufe0f", "🇺", "🇸", "🚀"], 2),
    ("arabic", list("مرحبابالعالم") + ["١", "٢", "٣"], 2),
    ("devanagari", list("नमस्तेदुनिया") + ["१", "२"], 1),
    ("greek_cyr", list("αβγδΣΩπПриветмир"), 2),
    ("numbers_other", list("²³¼½Ⅻ①⑩１２"), 1),
    ("punct_other", list("，。！？、「」『』“”‘’—–…·•†"), 2),
    ("symbols", list("©®™€£¥§¶°±×÷←→∑∞≠≤≥♥★"), 1),
    ("fullwidth", list("ＡＢＣａｂｃ！？：～"), 1),
    ("misc_letters", list("\u2102\u2107\u2126\u212a\u2135\ufb00\ufb01"), 1),
]

AVOID = set(range(0x1C, 0x20)) | {0x85}
WHITE_SPACE = set([*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028,
                   0x2029, 0x202F, 0x205F, 0x3000])


def check_codepoint(ch):
    cp = ord(ch)
    assert cp not in AVOID, hex(cp)
    cat = unicodedata.category(ch)
    assert cat != "Cn", hex(cp)
    assert bool(regex.fullmatch(r"\s", ch)) == (cp in WHITE_SPACE), hex(cp)
    for major in "LNPSMZC":
        assert bool(regex.fullmatch(r"\p{%s}" % major, ch)) == (cat[0] == major), (hex(cp), major)


def random_mix(rng, n):
    weights = [w for _, _, w in POOLS]
    out = []
    size = 0
    while size < n:
        _, items, _ = rng.choices(POOLS, weights)[0]
        run = rng.choice([1, 1, 1, 2, 3, 5, 8])
        for _ in range(run):
            s = rng.choice(items)
            out.append(s)
            size += len(s)
    return "".join(out)[:n]


def split(text, patterns):
    """Segment lengths of `text` under the pattern list, like the reference."""
    segs = [(0, len(text))]
    for p in patterns:
        r = regex.compile(p)
        new = []
        for a, b in segs:
            sub = text[a:b]
            last = 0
            for m in r.finditer(sub):
                s, e = m.span()
                assert e > s, (p, sub)
                if s > last:
                    new.append((a + last, a + s))
                new.append((a + s, a + e))
                last = e
            if last < len(sub):
                new.append((a + last, b))
        segs = new
    return [b - a for a, b in segs]


def escape(s, ascii_only=False):
    out = []
    for ch in s:
        cp = ord(ch)
        if (ascii_only and cp >= 0x7F) or cp <= 0x20 or ch == "%" or 0x7F <= cp <= 0xA0 or cp in WHITE_SPACE or \
                unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Zs"):
            out.append("%%{%X}" % cp)
        else:
            out.append(ch)
    return "".join(out)


def main():
    rng = random.Random(20240611)
    corpus = list(FIXED)
    for n in (50, 100, 200, 300, 500, 800):
        corpus.append(random_mix(rng, n))
    for _ in range(2):
        corpus.append(random_mix(rng, 3000))
    for s in corpus:
        for ch in s:
            check_codepoint(ch)

    os.makedirs(OUT_DIR, exist_ok=True)
    lines = ["# Generated by scripts/gen_regex_vectors.py (Python regex %s). Do not edit." % regex.__version__]
    for name, pats in LISTS.items():
        lines.append("list " + name)
        for p in pats:
            lines.append("re " + escape(p, ascii_only=True))
    for text in corpus:
        lines.append("text " + escape(text))
        for name, pats in LISTS.items():
            lengths = split(text, pats)
            assert sum(lengths) == len(text)
            lines.append(("split %s %s" % (name, " ".join(map(str, lengths)))).rstrip())
    path = os.path.join(OUT_DIR, "split_vectors.txt")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s (%d texts, %d bytes)" % (path, len(corpus), os.path.getsize(path)))


if __name__ == "__main__":
    main()

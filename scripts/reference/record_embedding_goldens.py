#!/usr/bin/env python3
"""Records pooled vectors of llama.cpp's llama-embedding (scripts/reference/build_llama_cpp.sh
embedding) into tests/data/golden/embeddings/NAME.json for tests/capi/embed_test.cpp:
{"file", "pooling", "texts", "embeddings", "command"}. Vectors are L2-normalized (the tool's
default --embd-normalize 2); rank pooling records the classifier's scores.

  scripts/reference/record_embedding_goldens.py LLAMA_BUILD_DIR EMBED_MODELS_DIR SMOLLM2_FILE [NAME...]

(with NAMEs, only those goldens are recorded)
"""
import json
import os
import subprocess
import sys

TEXTS = ["Hello, world!", "The quick brown fox jumps over the lazy dog.", "Embeddings map text to vectors.", "a",
         "Ünïcödé and CJK 漢字 survive WordPiece."]
# Longer than EmbeddingGemma-style files' sliding window (8 positions) several times over.
LONG = ("Sliding windows only matter once a text is longer than the window: this sentence runs to well over "
        "forty tokens so that every position sees a different part of it.")
RANK_PAIRS = [("what is a panda?", "The giant panda is a bear native to China."),
              ("what is a panda?", "Paris is the capital of France."),
              ("how to bake bread", "Mix flour, water, yeast and salt, then bake.")]


def run(tool, model, pooling, prompts, extra=()):
    cmd = [tool, "-m", model, "--pooling", pooling, "--embd-output-format", "array", "-c", "2048", "-b", "2048",
           "-ub", "2048", "-t", "2", "--embd-separator", "<#sep#>", *extra, "-p", "<#sep#>".join(prompts)]
    for _ in range(10):
        # The tool prints through llama.cpp's asynchronous log, which can lose the output's tail
        # (or all of it) at exit: run again until the array is whole.
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        if "[[" in out and "]]" in out:
            break
    if "]]" not in out:
        # Never whole (nomic-bert-f32 was recorded this way): one prompt per run in the plain
        # format, every value with 6 decimals.
        vecs = []
        for p in prompts:
            one = cmd[:-1] + [p]
            i = one.index("--embd-output-format")
            del one[i:i + 2]  # the default format
            text = subprocess.run(one, check=True, capture_output=True, text=True).stdout
            line = next(ln for ln in text.splitlines() if ln.startswith("embedding 0:"))
            vecs.append([float(x) for x in line.split(":", 1)[1].split()])
        return vecs, " ".join(os.path.basename(c) if c == model else c for c in one[:-2]) + " -p ..."
    start = out.index("[[")
    vecs = json.loads(out[start:out.rindex("]]") + 2])
    assert len(vecs) == len(prompts), (len(vecs), len(prompts))
    return vecs, " ".join(os.path.basename(c) if c == model else c for c in cmd[:-2]) + " -p ..."


def main(build, models, smollm2, *only):
    tool = os.path.join(build, "bin", "llama-embedding")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    out_dir = os.path.join(root, "tests", "data", "golden", "embeddings")
    os.makedirs(out_dir, exist_ok=True)
    jobs = [("bert-f32-cls", os.path.join(models, "bert-f32.gguf"), "cls", TEXTS),
            ("bert-f32-mean", os.path.join(models, "bert-f32.gguf"), "mean", TEXTS),
            ("bert-q8_0-cls", os.path.join(models, "bert-q8_0.gguf"), "cls", TEXTS),
            ("bert-q4_0-cls", os.path.join(models, "bert-q4_0.gguf"), "cls", TEXTS),
            ("bert-rank-f32-rank", os.path.join(models, "bert-rank-f32.gguf"), "rank",
             [q + "\t" + d for q, d in RANK_PAIRS]),
            ("nomic-bert-f32-mean", os.path.join(models, "nomic-bert-f32.gguf"), "mean", TEXTS),
            ("qwen3-embed-f32-last", os.path.join(models, "qwen3-embed-f32.gguf"), "last", TEXTS),
            ("qwen3-embed-f32-mean", os.path.join(models, "qwen3-embed-f32.gguf"), "mean", TEXTS),
            ("qwen3-rank-f32-rank", os.path.join(models, "qwen3-rank-f32.gguf"), "rank",
             [q + "\t" + d for q, d in RANK_PAIRS]),
            ("gemma-embed-f32-mean", os.path.join(models, "gemma-embed-f32.gguf"), "mean", TEXTS + [LONG]),
            ("modern-bert-f32-mean", os.path.join(models, "modern-bert-f32.gguf"), "mean", TEXTS + [LONG]),
            # Q8_0 and Q4_0 files of the same shapes (every matrix in that type), the file's pooling.
            *[(f"{m}-{q}-{pool}", os.path.join(models, f"{m}-{q}.gguf"), pool, texts)
              for m, pool, texts in (("nomic-bert", "mean", TEXTS), ("qwen3-embed", "last", TEXTS),
                                     ("gemma-embed", "mean", TEXTS + [LONG]),
                                     ("modern-bert", "mean", TEXTS + [LONG]))
              for q in ("q8_0", "q4_0")],
            ("smollm2-last", smollm2, "last", TEXTS),
            ("smollm2-mean", smollm2, "mean", TEXTS)]
    for name, model, pooling, texts in jobs:
        if only and name not in only:
            continue
        if pooling == "rank":
            # The tool normalizes n_embd values from a buffer of n_cls_out scores: no
            # normalization, and only the scores are kept.
            vecs, cmd = run(tool, model, pooling, texts, ("--embd-normalize", "-1"))
            # One score per label (Qwen3-Reranker: P(yes), P(no)).
            labels = 2 if "qwen3" in name else 1
            vecs = [v[:labels] for v in vecs]
        else:
            vecs, cmd = run(tool, model, pooling, texts)
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
            json.dump({"file": os.path.basename(model), "pooling": pooling, "texts": texts, "embeddings": vecs,
                       "command": cmd}, f, ensure_ascii=False)
            f.write("\n")
        print(name, len(vecs), len(vecs[0]))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])

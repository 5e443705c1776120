#!/usr/bin/env python3
"""Times one llama-mtmd-cli turn from outside, for bench/vision_bench.sh: its single-turn mode
prints no llama_perf summary, so the time to first token is taken on this side's clock, from the
line it logs once the model and projector are loaded ("This is an experimental CLI", just before
it reads the image) to the first bytes of generated text on stdout (it flushes each piece).
The encode is its own log line ("mtmd batch encoding done in N ms").

  bench/mtmd_ttft.py LOG_FILE -- llama-mtmd-cli ARGS...   (ARGS with -n 1)
Prints "ENCODE_MS TTFT_MS"; the tool's stderr goes to LOG_FILE.
"""
import os
import re
import subprocess
import sys
import threading
import time


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    log_path, cmd = sys.argv[1], sys.argv[3:]
    start = [None]
    first = [None]
    encode = [None]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def read_err(log):
        for line in iter(p.stderr.readline, b""):
            now = time.monotonic()
            log.write(line)
            text = line.decode(errors="replace")
            if start[0] is None and "This is an experimental CLI" in text:
                start[0] = now
            m = re.search(r"batch encoding done in (\d+) ms", text)
            if m:
                encode[0] = float(m.group(1))

    with open(log_path, "wb") as log:
        t = threading.Thread(target=read_err, args=(log,))
        t.start()
        while True:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            if first[0] is None and chunk.strip():
                first[0] = time.monotonic()
        p.wait()
        t.join()
    if p.returncode != 0 or None in (start[0], first[0], encode[0]):
        sys.exit(f"mtmd_ttft: exit {p.returncode}; start, first token, encode seen: "
                 f"{start[0] is not None}, {first[0] is not None}, {encode[0] is not None} (log: {log_path})")
    print(f"{encode[0]:.1f} {1000 * (first[0] - start[0]):.1f}")


if __name__ == "__main__":
    main()

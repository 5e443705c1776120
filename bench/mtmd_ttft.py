#!/usr/bin/env python3
"""Times one llama-mtmd-cli turn from outside, for bench/vision_bench.sh: its single-turn mode
prints no llama_perf summary, so the time to first token is taken on this side's clock, from the
line it logs once the model and projector are loaded ("This is an experimental CLI", just before
it reads the image) to the first bytes of generated text on stdout (it flushes each piece).
The encode is its own log line ("mtmd batch encoding done in N ms"); its CPU time (user + sys of
all the process's threads, from /proc/PID/stat) is read when the tool logs "encoding mtmd batch"
and again at "batch encoding done": a CPU-time ratio is far less sensitive to other jobs on a
shared machine than the wall clock.

  bench/mtmd_ttft.py [--encode-only] LOG_FILE -- llama-mtmd-cli ARGS...   (ARGS with -n 1)
Prints "ENCODE_MS TTFT_MS ENCODE_CPU_MS"; the tool's stderr goes to LOG_FILE. --encode-only ends
the tool once the image is encoded and prints "ENCODE_MS - ENCODE_CPU_MS".
"""
import os
import re
import subprocess
import sys
import threading
import time


def cpu_ms(pid):
    """User + system time of every thread of PID so far (/proc/PID/stat's utime and stime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return 1000.0 * (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    args = sys.argv[1:]
    encode_only = bool(args) and args[0] == "--encode-only"
    if encode_only:
        args = args[1:]
    if len(args) < 3 or args[1] != "--":
        sys.exit(__doc__)
    log_path, cmd = args[0], args[2:]
    start = [None]
    first = [None]
    encode = [None]
    cpu = [None, None]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def read_err(log):
        for line in iter(p.stderr.readline, b""):
            now = time.monotonic()
            log.write(line)
            text = line.decode(errors="replace")
            if start[0] is None and "This is an experimental CLI" in text:
                start[0] = now
            if cpu[0] is None and "encoding mtmd batch" in text:
                cpu[0] = cpu_ms(p.pid)
            m = re.search(r"batch encoding done in (\d+) ms", text)
            if m:
                cpu[1] = cpu_ms(p.pid)
                encode[0] = float(m.group(1))
                if encode_only:
                    p.kill()

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
    encode_cpu = "-" if None in cpu else f"{cpu[1] - cpu[0]:.0f}"
    if encode_only and encode[0] is not None:
        print(f"{encode[0]:.1f} - {encode_cpu}")
        return
    if p.returncode != 0 or None in (start[0], first[0], encode[0]):
        sys.exit(f"mtmd_ttft: exit {p.returncode}; start, first token, encode seen: "
                 f"{start[0] is not None}, {first[0] is not None}, {encode[0] is not None} (log: {log_path})")
    print(f"{encode[0]:.1f} {1000 * (first[0] - start[0]):.1f} {encode_cpu}")


if __name__ == "__main__":
    main()

"""Process helpers shared by the serve tests (test_serve.py, test_replicas.py)."""
import signal
import subprocess


def stop(proc, what, sig=signal.SIGTERM, timeout=30):
    """Sends sig unless proc has exited, waits up to timeout s (then kills it and fails naming
    what); returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("%s did not exit within %d s of signal %d" % (what, timeout, sig))
    return proc.returncode

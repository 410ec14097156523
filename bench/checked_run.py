"""The benchmark drivers' one way to run a command: its output captured, and a failure raised with
the command's own last words (bench/peers.py, bench/race.py)."""
import subprocess


def run(cmd, **kw):
    """subprocess.run that fails with the command's own output."""
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout[-2000:]}{out.stderr[-4000:]}")
    return out

"""What the Python client checks share (run.sh python puts this folder on PYTHONPATH).

A check is a list of steps; each step passes or fails with what was
wanted and what came, named by the client and the step, and the last
line counts them (as clients.mjs does for the npm packages).
"""

import traceback


class StepError(Exception):
    """A check that did not hold: the message says what came instead."""


def check(cond, what):
    if not cond:
        raise StepError(what)


class Report:
    """The outcome of one client's steps, printed as they end."""

    def __init__(self, client):
        self.client = client
        self.passed = 0
        self.failed = []

    def ok(self, step, note=""):
        self.passed += 1
        print(f"ok   {self.client}: {step}{note}", flush=True)

    def fail(self, step, err):
        why = str(err)
        if not isinstance(err, StepError):  # the SDK's error, e.g. openai.BadRequestError with the server's message
            why = f"{type(err).__name__}: {err}\n" + "".join(traceback.format_exception(err))
        self.failed.append(f"{self.client}: {step}: {why}")
        print(f"FAIL {self.client}: {step}: {why.splitlines()[0] if why else repr(err)}", flush=True)

    def done(self):
        """Prints every failure in full and the count; the exit status."""
        for f in self.failed:
            print(f"FAIL {f}")
        print(f"clients-python: {self.client}: {self.passed} passed, {len(self.failed)} failed")
        return 1 if self.failed else 0

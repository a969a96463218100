"""check(): compare a reader's result in an exercise notebook with the book's value.

One source for every notebook: the standalone notebooks carry a copy of this file in their
checker cell (widgets/build/sync_check.py writes it; tests/reference/test_notebook_check.py fails
when a copy differs), the notebooks that run from a clone import it. It uses the standard library
only, so the copy runs wherever the notebook does; tensors and arrays are read through .tolist().
"""
import math


class Verdict:
    """What check() found: `state` is "right", "off" or "not done"; truthy only when right.

    Jupyter shows nothing for it (check() has printed the message already), so a check on a
    cell's last line does not echo a second line."""

    def __init__(self, state, message):
        self.state, self.message = state, message

    def __bool__(self):
        return self.state == "right"

    def __repr__(self):
        return self.message

    def _ipython_display_(self):
        pass


def _flat(x):
    """A number, a string or a bool as it is; a tensor, an array, a list or a tuple as a flat list."""
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):
        x = x.tolist()  # a torch tensor or a numpy array (a 0-d one gives a plain number)
    if isinstance(x, (list, tuple)):
        out = []
        for item in x:
            item = _flat(item)
            out.extend(item if isinstance(item, list) else [item])
        return out
    return x


def _show(x):
    if isinstance(x, bool) or isinstance(x, str):
        return repr(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return str(x)
        return f"{int(x):,}" if x.is_integer() and abs(x) < 1e15 else f"{x:.6g}"
    return repr(x)


def _show_all(x):
    return "[" + ", ".join(_show(y) for y in x) + "]" if isinstance(x, list) else _show(x)


def _compare(yours, book, rel, abs_):
    """None when `yours` matches `book` within the tolerance, else the sentence that says how not."""
    if isinstance(book, (str, bool)) or isinstance(yours, (str, bool)):
        a = yours.strip().lower() if isinstance(yours, str) else yours
        b = book.strip().lower() if isinstance(book, str) else book
        return None if a == b and type(a) is type(b) else f"yours is {_show(yours)}, the book's {_show(book)}"
    if not isinstance(yours, (int, float)):
        return f"yours is {_show(yours)}, not a number; the book's is {_show(book)}"
    if math.isnan(book) or math.isnan(yours):
        if math.isnan(book) and math.isnan(yours):
            return None
        return f"yours is {_show(yours)}, the book's {_show(book)} (nan: not a number, as 0/0 gives)"
    if math.isinf(book) or math.isinf(yours):
        return None if yours == book else f"yours is {_show(yours)}, the book's {_show(book)}"
    allowed = max(abs_ or 0.0, (rel or 0.0) * abs(book))
    diff = yours - book
    if abs(diff) <= allowed:
        return None
    side = "high" if diff > 0 else "low"
    share = f" ({abs(diff) / abs(book):.2%})" if book else ""
    limit = f"the check allows ±{_show(allowed)}" if allowed else "the check wants it exact"
    return (f"yours, {_show(yours)}, is {_show(abs(diff))}{share} too {side}: the book's is "
            f"{_show(book)}, and {limit}")


def check(what, yours, book, *, rel=None, abs=None):
    """Print whether `yours` is the book's value `book`, or how far off, and return the Verdict.

    what: a few words that name the quantity. yours: the reader's result: a number, a string
    (compared without case), a bool, or a tensor/array/list compared element by element; None
    (or ...) is "not done yet", never an error. book: the book's value. rel, abs: the tolerance,
    relative to the book's value or absolute (the larger one counts); none given: a whole
    number or a string must be exact, any other number within one part in a million.
    """
    if yours is None or yours is Ellipsis:
        verdict = Verdict("not done", f"… {what}: not done yet (put your answer in place of None)")
        print(verdict.message)
        return verdict
    ys, bs = _flat(yours), _flat(book)
    if rel is None and abs is None and any(isinstance(b, float) for b in
                                           (bs if isinstance(bs, list) else [bs])):
        rel = 1e-6  # a float from a computation: equal up to rounding, never bit for bit
    if isinstance(bs, list) != isinstance(ys, list) or (isinstance(bs, list) and len(ys) != len(bs)):
        n = len(ys) if isinstance(ys, list) else 1
        m = len(bs) if isinstance(bs, list) else 1
        verdict = Verdict("off", f"✗ {what}: yours has {n} number{'s' * (n != 1)}, "
                                 f"the book's {m}: {_show_all(bs)}")
        print(verdict.message)
        return verdict
    pairs = list(zip(ys, bs)) if isinstance(bs, list) else [(ys, bs)]
    wrong = [(i, _compare(y, b, rel, abs)) for i, (y, b) in enumerate(pairs)]
    wrong = [(i, w) for i, w in wrong if w is not None]
    if not wrong:
        same = _show_all(ys) == _show_all(bs)  # the same when written out: no need to say it twice
        verdict = Verdict("right", f"✓ {what}: right ({_show_all(ys)})." if same else
                          f"✓ {what}: right. Yours {_show_all(ys)}, the book's {_show_all(bs)}.")
    elif len(pairs) == 1:
        verdict = Verdict("off", f"✗ {what}: not yet. {wrong[0][1]}.")
    else:
        i, first = wrong[0]
        verdict = Verdict("off", f"✗ {what}: not yet. {len(wrong)} of {len(pairs)} entries are off; "
                                 f"entry {i}: {first}.")
    print(verdict.message)
    return verdict

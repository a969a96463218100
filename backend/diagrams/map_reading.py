"""How to read an attention map: one row per token that looks (the query), one column per token
looked at (the key), each row's weights adding up to 1.

Drawn from the book's trained model (`backend/bookmodel`), averaged over all layers and heads, for
a short sentence with `<|endoftext|>` in front, as the attention-map widget does. The cells above
the diagonal are the future, which a causal mask keeps at exactly 0; they are left blank.
"""

from __future__ import annotations

from backend.diagrams.svg import Canvas

MAX_TOKENS = 7           # columns of 40 units: more would not fit a phone's width
DEFAULT = "The animal was not there"
SHORT = {"<|endoftext|>": "<eot>"}


def weights(text: str = DEFAULT) -> tuple[list[str], list[list[float]]]:
    """The tokens and the (T, T) averaged map the widget would show for `text`."""
    from backend.compute.attention_models import encode_book
    e = encode_book(text)
    w = e.maps.mean(dim=(0, 1))  # (T, T): mean of all layers and heads
    return e.tokens, [[float(x) for x in row] for row in w]


def draw(text: str = DEFAULT, row: int = -1) -> Canvas:
    tokens, w = weights(text)
    T = len(tokens)
    if T > MAX_TOKENS:
        raise ValueError(f"'{text}' is {T} tokens; the diagram draws at most {MAX_TOKENS}")
    q = row % T
    labels = [SHORT.get(t, t.strip()) for t in tokens]
    left, top = 62, 62
    cell = min(40, 240 // T)  # the grid stays 240 units wide at most, the sum beside it
    height = top + T * cell + 34
    rows_text = "; ".join(
        f"row {labels[i]}: " + ", ".join(f"{labels[j]} {w[i][j]:.2f}" for j in range(i + 1))
        for i in range(T))
    desc = (f"An attention map of the book's model for '{text}', the mean of all layers and heads. "
            f"Each of the {T} rows is a token that looks, each of the {T} columns a token it looks "
            f"at; cells above the diagonal are the future and hold 0. {rows_text}. "
            f"Every row adds up to 1; the highlighted row, '{labels[q]}', adds "
            + " + ".join(f"{w[q][j]:.2f}" for j in range(q + 1)) + f" = {sum(w[q]):.2f}.")
    c = Canvas(360, height, title="Reading an attention map", desc=desc)
    c.text(left + T * cell / 2, 14, "key: the token looked at →", size="small")
    c.text(6, top - 12, "query ↓", size="small", anchor="start")
    for j, lab in enumerate(labels):
        c.text(left + j * cell + cell / 2, top - 30 + (j % 2) * 14, lab, size="small", mono=True)
    for i in range(T):
        y = top + i * cell
        c.text(left - 6, y + cell / 2, labels[i], size="small", anchor="end", mono=True,
               weight="bold" if i == q else None)
        for j in range(T):
            x = left + j * cell
            if j > i:  # the future: masked, exactly 0
                c.rect(x, y, cell, cell, tone="plain", rx=0, dashed=True)
                continue
            c.rect(x, y, cell, cell, tone="accent" if i == q else "query", rx=0)
            c.text(x + cell / 2, y + cell / 2, f"{w[i][j]:.2f}", size="small", mono=True)
        if i == q:
            c.text(left + T * cell + 6, y + cell / 2, f"Σ = {sum(w[i]):.2f}", size="small",
                   anchor="start", weight="bold")
    c.text(180, top + T * cell + 18, "each row adds up to 1; blank cells are the future (0)",
           size="small")
    return c

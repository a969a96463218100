"""One lock for resolving names from `transformers`.

`transformers` exposes its classes lazily: the first `from transformers import X` runs the import
of X's submodule. Two threads of one gunicorn worker doing that at once (the parity and the
attention-map widgets, say) can see the half-initialised module and fail with
`ImportError: cannot import name 'LlamaForCausalLM'` for a name that exists, which reached a
reader as a 500. Every lazy import of transformers in the backend holds this lock.
"""

import threading

LOCK = threading.Lock()

"""SmolLM2-135M-Instruct: a real trained Llama with grouped-query attention, run by the book's
own `DecoderLM` (`load.py`)."""

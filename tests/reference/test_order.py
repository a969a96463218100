import torch
import torch.nn.functional as F

from backend.reference import order


def test_self_attend_is_softmax_attention_with_q_k_v_equal():
    x = order.embed(["dog", "bites", "man"])
    expected = F.scaled_dot_product_attention(x[None], x[None], x[None])[0]
    torch.testing.assert_close(order.self_attend(x), expected, atol=1e-6, rtol=1e-6)


def test_without_positions_shuffling_words_only_shuffles_outputs():
    words = ["dog", "bites", "man"]
    for perm in ([2, 1, 0], [1, 2, 0], [0, 2, 1]):
        shuffled = [words[i] for i in perm]
        out, out_shuffled = order.self_attend(order.embed(words)), order.self_attend(order.embed(shuffled))
        # The same numbers in another order: equal up to float32 summation order in the softmax.
        torch.testing.assert_close(out_shuffled, out[perm], atol=1e-6, rtol=0)


def test_a_position_signal_breaks_the_symmetry():
    a = order.vector_of("dog", ["dog", "bites", "man"], strength=1.0)
    b = order.vector_of("dog", ["man", "bites", "dog"], strength=1.0)
    assert (a - b).abs().max() > 0.5

"""Which launch a layout gets: flat, row-pitched 2-D, or refused."""
from kplay._layout import is_dense, plan


def test_dense_equal_strides_run_flat():
    assert plan((4, 6), (6, 1), (6, 1)) == ("flat", 24)
    assert plan((4, 6), (1, 4), (1, 4)) == ("flat", 24)  # transposed, both alike
    assert plan((0, 5), (5, 1), (7, 1)) == ("flat", 0)


def test_column_slices_and_foldable_leading_dims_are_pitched():
    assert plan((4, 3), (6, 1), (3, 1)) == ("2d", 4, 3, (6, 3))
    assert plan((2, 4, 3), (24, 6, 1), (12, 3, 1)) == ("2d", 8, 3, (6, 3))


def test_other_layouts_are_refused():
    assert plan((4, 6), (1, 4), (6, 1)) is None  # transposed against contiguous
    assert plan((4, 6), (0, 1), (6, 1)) is None  # broadcast
    assert plan((2, 4, 3), (48, 6, 1), (12, 3, 1)) is None  # rows do not fold
    assert plan((6,), (2,), (1,)) is None  # gapped inner stride


def test_is_dense():
    assert is_dense((2, 3), (3, 1)) and is_dense((2, 3), (1, 2)) and is_dense((1, 3), (99, 1))
    assert not is_dense((2, 3), (4, 1)) and not is_dense((2, 3), (0, 1))

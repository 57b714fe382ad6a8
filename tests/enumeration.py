"""The exhaustive tests' odometer: every string of a length over a few representatives."""

import numba


@numba.njit(cache=False)
def next_string(idx, k):
    """Step ``idx`` (one representative's index per position, the last fastest) to the next
    string over ``k`` representatives; False once every string was visited."""
    j = idx.size - 1
    while j >= 0 and idx[j] == k - 1:
        idx[j] = 0
        j -= 1
    if j < 0:
        return False
    idx[j] += 1
    return True


@numba.njit(cache=False)
def same_ends(a, na, b, nb):
    """Whether ``a[:na]`` and ``b[:nb]`` are the same piece ends."""
    if na != nb:
        return False
    for j in range(na):  # noqa: SIM110 -- compiled: no generator expressions
        if a[j] != b[j]:
            return False
    return True

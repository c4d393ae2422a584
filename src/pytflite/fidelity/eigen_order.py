"""LiteRT's float summation order for CONV_2D: Eigen's matrix product, reproduced bit for bit.

A BLAS product or a plain einsum sums in an order of its own, ~1e-7 relative off LiteRT, which a hybrid
kernel downstream can turn into a whole quantization step. In exact mode (Context.exact_float_summation)
the float CONV_2D and DEPTHWISE_CONV_2D reproduce LiteRT's order on x86 (SSE packets of four floats, no
fused multiply-add, one thread), found by experiment and by reading its kernels:
- CONV_2D, optimized: im2col, then Eigen's matrix product of the filter [O, K] and the windows [K, P]
  (cpu_backend_gemm), then the bias. Eigen picks its kernel by shape: P == 1 or O == 1 is a
  matrix-vector product (four lanes by k % 4, reduced as (l0 + l2) + (l1 + l3), then the last K % 4
  terms), both is a dot product (four packets, see _inner_product_order); K + O + P < 20 a
  coefficient-wise product (_redux_order); otherwise its blocked product (eigen_product): each output
  sums along the window in order, except the last O % 8 output channels of a row block, in whole
  column panels of four pixels. The blocks come from the host's cache sizes as Eigen reads them with
  CPUID (eigen_blocking; HostProfile.eigen_caches): the window is split into depth blocks that fit L1
  (K > 680 with a 32 KiB L1, K > 1016 with 48 KiB), summed block after block.
- CONV_2D, grouped or reference kernel: in order along the window (kernel rows, kernel columns, input
  channels), then the bias.
- DEPTHWISE_CONV_2D, optimized: the bias, then each tap's product in order (kernel rows, then columns);
  reference: the taps, then the bias.
Every product and partial sum is rounded to float32. The NumPy calls used have a known order:
- ufunc.reduce over an axis that is not the innermost of a C-contiguous array adds the slices one
  after the other (pairwise summation only runs along the innermost axis, and only when the reduction
  is over it: an array of one element per slice would be reduced that way, so that case is summed
  with np.add.accumulate, sequential by definition);
- np.einsum("kp,ko->op") with p and o contiguous in every operand and more than one pixel accumulates
  out[o, :] += w[k, o] * x[k, :] for k in order (its iterator orders the loops by the strides; with
  k innermost it would sum like a dot product), which is checked once (einsum_is_sequential: a build
  whose einsum fuses the multiply-add or reorders the sum falls back to products and a reduction).
LiteRT run with num_threads > 1 computes a constant-filter, undilated CONV_2D with Eigen's threaded
tensor contraction, in yet another order: not reproduced. On ARM, Eigen's NEON packets use fused
multiply-adds: not reproduced either; exact mode there computes LiteRT-x86's order, which hybrid models
keep within 1e-6 of LiteRT-aarch64 (mobilenet_v2_dynamic: 4.6e-7, LiteRT's own x86-to-aarch64 spread).
"""

from __future__ import annotations

import functools

import numpy as np

# einsum's C function itself: np.einsum's Python layer costs more than a small layer (~1 us).
try:
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import c_einsum as _einsum


def _sequential_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """sum over k, in order, of x[k, p] * w[k, o], into [o, p], one NumPy step per k (slow, plain)."""
    total = np.zeros((w.shape[1], x.shape[1]), np.float32)
    for k in range(x.shape[0]):
        total += np.multiply(w[k][:, None], x[k][None, :])
    return total


@functools.cache
def einsum_is_sequential() -> bool:
    """Whether this NumPy's einsum sums "kp,ko->op" in order without fused multiply-adds (checked on
    values spread over many magnitudes, where any other order or a fused multiply-add shows)."""
    rng = np.random.default_rng(7)
    for depth, units, pixels in ((37, 3, 9), (70, 2, 2), (5, 1, 33)):
        x = (rng.standard_normal((depth, pixels)) * 2.0 ** rng.integers(-12, 12, (depth, pixels))).astype(
            np.float32
        )
        w = (rng.standard_normal((depth, units)) * 2.0 ** rng.integers(-12, 12, (depth, units))).astype(
            np.float32
        )
        if not np.array_equal(_einsum("kp,ko->op", x, w), _sequential_reference(x, w)):
            return False
        if not np.array_equal(
            _einsum("gkp,gko->gop", np.stack([x, x[::-1]]), np.stack([w, w[::-1]])),
            np.stack([_sequential_reference(x, w), _sequential_reference(x[::-1], w[::-1])]),
        ):
            return False
    return True


# The products of the fallback (no sequential einsum) are made this many at a time.
_PRODUCTS_AT_ONCE = 1 << 20


def sum_in_order(terms: np.ndarray, out: np.ndarray) -> None:
    """out = ((terms[0] + terms[1]) + terms[2]) + ..., in float32; the sum axis is the outermost one of
    `terms` (the largest stride)."""
    if out.size > 1:
        np.add.reduce(terms, axis=0, out=out)
    elif out.size == 1:
        column = terms.reshape(terms.shape[0], -1)[:, 0]
        out.reshape(-1)[0] = np.add.accumulate(column)[-1] if column.size else 0


def sequential_products(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """out [G, O/G, P] = for each group, sum over k in order of x[g, k, p] * w[g, k, o], each product and
    each partial sum rounded to float32 (see above)."""
    groups, depth, pixels = x.shape
    units = w.shape[2]
    # einsum's loop order follows the operands' strides: with pixels and output channels contiguous
    # (and more than one pixel) its inner loop runs over pixels, one depth after the other
    inner = all(a.strides[-1] == a.itemsize for a in (x, w, out))
    if pixels > 1 and inner and einsum_is_sequential():
        if groups == 1:
            _einsum("kp,ko->op", x[0], w[0], out=out[0])
        else:
            _einsum("gkp,gko->gop", x, w, out=out)
        return
    step = max(1, _PRODUCTS_AT_ONCE // max(depth * pixels, 1))
    for g in range(groups):
        for first in range(0, units, step):
            last = min(units, first + step)
            products = np.multiply(x[g][:, None, :], w[g, :, first:last, None])  # [K, units, P]
            sum_in_order(products, out[g, first:last])


def _lanes(x: np.ndarray, w: np.ndarray, count: int, out: np.ndarray) -> None:
    """out [count, O, P]: lane j = the sequential sum of the products of the depths k = j (mod count)
    (x [K, P], w [K, O]; K a multiple of `count`)."""
    for j in range(count):
        sequential_products(x[None, j::count], w[None, j::count], out[j : j + 1])


def _add_terms(acc: np.ndarray, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """acc [O, P] + x[k] * w[k] for each remaining depth k, in order (a handful)."""
    for k in range(x.shape[0]):
        acc = acc + np.multiply(w[k][:, None], x[k][None, :])
    return acc


def _packet_sum(lanes: np.ndarray) -> np.ndarray:
    """Eigen's SSE predux of four lanes: (l0 + l2) + (l1 + l3)."""
    return (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])


def _inner_product_order(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A dot product (O == P == 1) as Eigen's inner product sums it: up to four packets of four lanes,
    packet i accumulating the blocks i (mod 4) of 16 values, the leftover blocks into the first ones,
    then p2 + p3, p1 + (.), p0 + (.), the lane reduction, and the last K % 4 products in order."""
    products = np.multiply(x[:, :1], w[:, :1])  # [K, 1]
    depth = products.shape[0]
    if depth < 4:
        return _add_terms(np.zeros((1, 1), np.float32), x, w)
    blocks = depth // 4
    packets = [products[4 * i : 4 * i + 4].copy() for i in range(min(blocks, 4))]
    if blocks >= 4:
        quad = depth // 16 * 16
        for k in range(16, quad, 16):
            for i in range(4):
                packets[i] += products[k + 4 * i : k + 4 * i + 4]
        for i in range(blocks - quad // 4):
            packets[i] += products[quad + 4 * i : quad + 4 * i + 4]
        packets[2] = packets[2] + packets[3]
    if blocks >= 3:
        packets[1] = packets[1] + packets[2]
    if blocks >= 2:
        packets[0] = packets[0] + packets[1]
    total = _packet_sum(packets[0])[None, :]
    return _add_terms(total, x[blocks * 4 :], w[blocks * 4 :])


def _redux_order(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """[O, P] summed as Eigen's coefficient-wise (lazy) product does: two packets of four lanes over
    blocks of 8, p0 + p1, one more packet, the lane reduction, then the last K % 4 products."""
    products = np.multiply(w[:, :, None], x[:, None, :])  # [K, O, P], tiny (K + O + P < 20)
    depth = products.shape[0]
    if depth < 4:
        return _add_terms(np.zeros(products.shape[1:], np.float32), x, w)
    whole, eights = depth // 4 * 4, depth // 8 * 8
    first = products[0:4].copy()
    if whole > 4:
        second = products[4:8].copy()
        for k in range(8, eights, 8):
            first += products[k : k + 4]
            second += products[k + 4 : k + 8]
        first += second
        if whole > eights:
            first += products[eights : eights + 4]
    return _add_terms(_packet_sum(first), x[whole:], w[whole:])


def eigen_blocking(depth: int, rows: int, cols: int, caches: tuple[int, int, int]) -> tuple[int, int, int]:
    """(kc, mc, nc): the depth, row and column block sizes of Eigen's single-threaded product heuristic
    (evaluateProductBlockingSizesHeuristic for float, SSE: mr = 8, nr = 4) for an [rows, depth] times
    [depth, cols] product on a host with these (L1, L2, L3) cache sizes.

    kc: an 8 x kc and a kc x 4 panel (and an 8 x 4 result block) fit L1, the last block as large as
    possible. nc: a kc x nc panel fits half of Eigen's fixed 1.5 MB "L2" (or what L1 has left when the
    whole left operand fits it). mc, only when neither depth nor columns are blocked: a third of L1
    (tiny products), of L2 (at most 576 rows, products up to 32 KiB, when an L3 is reported) or of
    the fixed 1.5 MB."""
    if max(depth, rows, cols) < 48:
        return depth, rows, cols
    l1, l2, l3 = caches
    mr, nr, peeling, item = 8, 4, 8, 4
    k_sub, k_div = mr * nr * item, mr * item + nr * item
    largest = max(((l1 - k_sub) // k_div) & ~(peeling - 1), 1)
    kc = depth
    if depth > largest:
        rest = depth % largest
        kc = (
            largest
            if rest == 0
            else largest - peeling * ((largest - 1 - rest) // (peeling * (depth // largest + 1)))
        )
    fixed_l2 = 1572864
    remaining_l1 = l1 - k_sub - rows * kc * item
    if remaining_l1 >= nr * item * kc:
        max_nc = remaining_l1 // (kc * item)
    else:
        max_nc = (3 * fixed_l2) // (2 * 2 * largest * item)
    nc = min(fixed_l2 // (2 * kc * item), max_nc) & ~(nr - 1)
    mc = rows
    if cols > nc:
        rest = cols % nc
        return kc, mc, nc if rest == 0 else nc - nr * ((nc - rest) // (nr * (cols // nc + 1)))
    if kc == depth:
        problem = depth * cols * item
        budget, most = fixed_l2, rows
        if problem <= 1024:
            budget = l1
        elif l3 != 0 and problem <= 32768:
            budget, most = l2, min(576, rows)
        block = min(budget // (3 * depth * item), most)
        if block > mr:
            block -= block % mr
        elif block == 0:
            return kc, mc, cols
        rest = rows % block
        mc = block if rest == 0 else block - mr * ((block - rest) // (mr * (rows // block + 1)))
    return kc, mc, cols


def _blocks(size: int, block: int) -> list[tuple[int, int]]:
    return [(first, min(size, first + block)) for first in range(0, size, block)]


def _row_panels(part: np.ndarray, xs: np.ndarray, ws: np.ndarray, panels: int) -> None:
    """Eigen's gebp kernel on rows [R] of one block: rows in groups of 8 (two packets) sum along the depth
    in order, as `part` already holds; a group of 4 left over (one packet, peeled by 8: even and odd
    depths apart) and the last R % 4 rows (one at a time: four accumulators by depth % 4) differ, in the
    whole panels of four columns."""
    units, size = ws.shape[1], xs.shape[0]
    eights = units // 8 * 8
    fours = eights + (4 if units % 8 >= 4 else 0)
    if eights == units or not panels:
        return
    if fours > eights:
        peeled = size & ~7
        lanes = np.zeros((2, fours - eights, panels), np.float32)
        if peeled:
            _lanes(xs[:peeled, :panels], ws[:peeled, eights:fours], 2, lanes)
        rest = xs[peeled:, :panels], ws[peeled:, eights:fours]
        part[eights:fours, :panels] = _add_terms(lanes[0] + lanes[1], *rest)
    if fours < units:
        whole = size & ~3
        lanes = np.zeros((4, units - fours, panels), np.float32)
        if whole:
            _lanes(xs[:whole, :panels], ws[:whole, fours:], 4, lanes)
        rest = xs[whole:, :panels], ws[whole:, fours:]
        part[fours:, :panels] = _add_terms((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]), *rest)


def eigen_product_is_sequential(depth: int, units: int, pixels: int, caches: tuple[int, int, int]) -> bool:
    """Whether eigen_product sums every output along the window in order from zero, as
    sequential_products does: Eigen's blocked product in one depth block, every row block whole groups
    of 8 output channels."""
    if units == 1 or pixels == 1 or depth + units + pixels < 20:
        return False
    kc, mc, _ = eigen_blocking(depth, units, pixels, caches)
    return kc == depth and all((bottom - top) % 8 == 0 for top, bottom in _blocks(units, mc))


def eigen_product(x: np.ndarray, w: np.ndarray, out: np.ndarray, caches: tuple[int, int, int]) -> None:
    """out [O, P] = x [K, P] times w [K, O] summed as Eigen sums it in LiteRT's optimized float CONV_2D
    on a host with these (L1, L2, L3) cache sizes (see the module's docstring)."""
    depth, pixels = x.shape
    units = w.shape[1]
    if units == 1 or pixels == 1:
        if units == 1 and pixels == 1:
            out[...] = _inner_product_order(x, w)
            return
        whole = depth // 4 * 4
        lanes = np.empty((4, units, pixels), np.float32)
        if whole:
            _lanes(x[:whole], w[:whole], 4, lanes)
        else:
            lanes.fill(0)
        total = _add_terms(_packet_sum(lanes), x[whole:], w[whole:])
        np.add(total, np.float32(0), out=out)  # added to the zeroed result
        return
    if depth + units + pixels < 20:
        out[...] = _redux_order(x, w)
        return
    kc, mc, _ = eigen_blocking(depth, units, pixels, caches)
    panels = pixels // 4 * 4  # the pixels in whole panels of four (the rest in order)
    depth_blocks = _blocks(depth, kc)
    part = out if len(depth_blocks) == 1 else np.empty_like(out)
    for index, (first, last) in enumerate(depth_blocks):
        xs, ws = x[first:last], w[first:last]
        sequential_products(xs[None], ws[None], part[None])
        for top, bottom in _blocks(units, mc):
            _row_panels(part[top:bottom], xs, ws[:, top:bottom], panels)
        if part is not out:
            if index == 0:
                out[...] = part
            else:
                np.add(out, part, out=out)

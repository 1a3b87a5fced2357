// The body of lk_vector_avx2.c and lk_vector_avx512.c, written once.
//
// Deliberately without an include guard: each of those files defines the
// names below for its instruction set and then includes this file once, so
// the same algorithms (exp, sigmoid, the composite ops, the loops) are
// compiled twice, 8 and 16 lanes wide. The wrappers are always_inline, so
// each compiled copy is the intrinsics it stands for, as if written by hand.
//
// The includer defines:
//   LK_TARGET        the target attribute every function here carries
//   LK_W             lanes a vector (8, 16)
//   lk_v             the vector type
//   lk_m             a compare result (lk_cmp), as lk_blend takes it
//   lk_lanes         which lanes a masked load or store touches
//   LK_PS(op)        the _ps intrinsic named op (add, mul, loadu, set1, ...)
//   LK_SLEEF(f)      SLEEF 3.5's u10 function f of this width
//   LK_SLEEF_MAP, LK_SLEEF_MAP2   the shim's mappers of this width
//   LK_UNARY_NAME, LK_BINARY_NAME, LK_SELECT_NAME, LK_AFFINE_CLAMP_NAME,
//   LK_SELECT_CMP_NAME   the functions to define
// and these always_inline functions (macros where an argument must be a
// constant):
//   lk_abs, lk_neg, lk_floor, lk_ceil, lk_round (to nearest)
//   lk_copysign(m, s)       |m| with the sign of s
//   lk_cmp(a, b, pred)      lk_m of the _CMP_ predicate
//   lk_blend(m, a, b)       b in m's lanes, a elsewhere
//   lk_bool(m)              1.0f in m's lanes, 0.0f elsewhere
//   lk_lanes_upto(left)     lanes [0, min(left, LK_W))
//   lk_load_lanes(p, k), lk_store_lanes(p, k, v)
//                           touch only k's lanes (others load as 0), so
//                           no byte past the end of an array is read or written
//   lk_exp_scale(p, n)      p * 2^n, n integral (lk_exp's last step)
//   lk_add_where(m, a, b)   a + b in m's lanes, a elsewhere (but see the
//                           AVX2 version)

#define lk_set1 LK_PS(set1)
#define lk_zero LK_PS(setzero)
#define lk_loadu LK_PS(loadu)
#define lk_storeu LK_PS(storeu)
#define lk_add LK_PS(add)
#define lk_sub LK_PS(sub)
#define lk_mul LK_PS(mul)
#define lk_div LK_PS(div)
#define lk_min LK_PS(min) // for NaN: the second operand (see lk_min_nan)
#define lk_max LK_PS(max)
#define lk_fmadd LK_PS(fmadd)
#define lk_fnmadd LK_PS(fnmadd)
#define lk_sqrt LK_PS(sqrt)

// e^x: x = n*ln2 + r, |r| <= ln2/2 (ln2 split in hi/lo so n*ln2_hi is
// exact), e^r = 1 + r + r^2*P(r) with Cephes' degree-5 P, and 2^n applied
// by lk_exp_scale, which rounds once, also into the subnormals, and
// overflows to inf. x is clamped first to [LK_EXP_X_MIN, LK_EXP_X_MAX]
// (outside it the result is 0 or inf anyway) so that r stays finite; the
// clamp keeps NaN (max_ps/min_ps return their second operand for NaN), and
// for NaN x the garbage n does not matter: p is NaN and stays NaN.
// Measured (AVX-512): 8.4e-8 max relative error over [-87, 88.7] (SLEEF's
// u10 expf: 8.2e-8) at 0.15 ns a float in L1/L2, SLEEF 0.20 ns.
#define LK_EXP_X_MAX 89.0f
#define LK_EXP_X_MIN -110.0f
#define LK_LOG2E 1.44269504088896341f
#define LK_LN2_HI 0.693359375f
#define LK_LN2_LO -2.12194440e-4f
#define LK_EXP_C5 1.9875691500e-4f
#define LK_EXP_C4 1.3981999507e-3f
#define LK_EXP_C3 8.3334519073e-3f
#define LK_EXP_C2 4.1665795894e-2f
#define LK_EXP_C1 1.6666665459e-1f
#define LK_EXP_C0 5.0000001201e-1f
LK_TARGET LK_INLINE lk_v lk_exp(lk_v x) {
    x = lk_min(lk_set1(LK_EXP_X_MAX), lk_max(lk_set1(LK_EXP_X_MIN), x));
    lk_v n = lk_round(lk_mul(x, lk_set1(LK_LOG2E)));
    lk_v r = lk_fnmadd(n, lk_set1(LK_LN2_HI), x);
    r = lk_fnmadd(n, lk_set1(LK_LN2_LO), r);
    lk_v p = lk_set1(LK_EXP_C5);
    p = lk_fmadd(p, r, lk_set1(LK_EXP_C4));
    p = lk_fmadd(p, r, lk_set1(LK_EXP_C3));
    p = lk_fmadd(p, r, lk_set1(LK_EXP_C2));
    p = lk_fmadd(p, r, lk_set1(LK_EXP_C1));
    p = lk_fmadd(p, r, lk_set1(LK_EXP_C0));
    p = lk_add(lk_fmadd(lk_mul(r, r), p, r), lk_set1(1.0f));
    return lk_exp_scale(p, n);
}

// sigmoid(x) = 1/(1+e) for x >= 0 and e/(1+e) for x < 0, e = exp(-|x|) in
// (0, 1]: never overflows, and the x < 0 tail keeps e's relative accuracy.
// The quotient is corrected once with the exact remainder (d + dlo = 1 + e
// exactly, Fast2Sum), so it adds about half an ulp to exp's error.
LK_TARGET LK_INLINE lk_v lk_sigmoid(lk_v x) {
    const lk_v one = lk_set1(1.0f);
    lk_v e = lk_exp(lk_neg(lk_abs(x)));
    lk_v d = lk_add(one, e);
    lk_v dlo = lk_add(lk_sub(one, d), e);
    lk_m negative = lk_cmp(x, lk_zero(), _CMP_LT_OQ);
    lk_v num = lk_blend(negative, one, e);
    lk_v inv = lk_div(one, d);
    lk_v q = lk_mul(num, inv);
    lk_v r = lk_fnmadd(q, dlo, lk_fnmadd(q, d, num)); // num - q*(d + dlo)
    return lk_fmadd(r, inv, q);
}

LK_TARGET LK_INLINE lk_v lk_recip(lk_v x) { return lk_div(lk_set1(1.0f), x); }
LK_TARGET LK_INLINE lk_v lk_isnan(lk_v x) { return lk_bool(lk_cmp(x, x, _CMP_UNORD_Q)); }
LK_TARGET LK_INLINE lk_v lk_isinf(lk_v x) {
    return lk_bool(lk_cmp(lk_abs(x), lk_set1(__builtin_inff()), _CMP_EQ_OQ));
}

// tanh(x) = sign(x) * tanh(|x|). For |x| < LK_TANH_POLY_MAX, an odd
// polynomial x + x^3 P(x^2), P of degree 5 fitted minimax (reweighted least
// squares on the relative error, Lawson) and rounded to float. Above,
// 1 - 2e/(1 + e) with e = exp(-2|x|) in (0, 0.19]: the quotient's error
// reaches the result scaled by at most (1 - tanh)/tanh = 0.45 there, which
// is why the polynomial reaches that far instead of a corrected division
// (twice the cost: measured). exp(-2|x|) underflows to 0 for large |x|,
// giving exactly 1; NaN fails the |x| < bound test and exp(NaN) is NaN.
// Measured exhaustively over the positive normal floats below 10 (both
// paths; odd symmetry covers the negatives): 1.1e-7 max relative error.
#define LK_TANH_POLY_MAX 0.85f
LK_TARGET LK_INLINE lk_v lk_tanh(lk_v x) {
    const lk_v one = lk_set1(1.0f);
    lk_v a = lk_abs(x);
    lk_v s = lk_mul(x, x);
    lk_v p = lk_set1(1.44026778e-3f);
    p = lk_fmadd(p, s, lk_set1(-7.14300387e-3f));
    p = lk_fmadd(p, s, lk_set1(2.11212225e-2f));
    p = lk_fmadd(p, s, lk_set1(-5.37965074e-2f));
    p = lk_fmadd(p, s, lk_set1(1.33314803e-1f));
    p = lk_fmadd(p, s, lk_set1(-3.33332658e-1f));
    lk_v small = lk_fmadd(lk_mul(x, s), p, x);
    lk_v e = lk_exp(lk_mul(a, lk_set1(-2.0f)));
    lk_v big = lk_copysign(lk_sub(one, lk_div(lk_add(e, e), lk_add(one, e))), x);
    return lk_blend(lk_cmp(a, lk_set1(LK_TANH_POLY_MAX), _CMP_LT_OQ), big, small);
}

// erf(x) = sign(x) * erf(|x|). For |x| <= LK_ERF_POLY_MAX, x + x P(x^2);
// above, 1 - exp(Q(|x|)) with Q approximating log(erfc(|x|)) on
// [LK_ERF_POLY_MAX, 4] (|x| is clamped to 4, where erf rounds to 1; min_ps
// keeps a NaN |x|, its second operand). P (degree 5) and Q (degree 6) are
// minimax fits by reweighted least squares on the relative error of erf
// (Lawson), coefficients rounded to float. Modeled in float arithmetic
// (numpy, FMA emulated, exp perturbed by its full 8.4e-8 error): 9.1e-8
// max relative error; measured exhaustively over the positive normal floats
// below 4.5: 8.4e-8.
#define LK_ERF_POLY_MAX 0.921875f
LK_TARGET LK_INLINE lk_v lk_erf(lk_v x) {
    lk_v a = lk_abs(x);
    lk_v s = lk_mul(x, x);
    lk_v p = lk_set1(-5.99107530e-4f);
    p = lk_fmadd(p, s, lk_set1(4.99322405e-3f));
    p = lk_fmadd(p, s, lk_set1(-2.67666467e-2f));
    p = lk_fmadd(p, s, lk_set1(1.12818167e-1f));
    p = lk_fmadd(p, s, lk_set1(-3.76124948e-1f));
    p = lk_fmadd(p, s, lk_set1(1.28379151e-1f));
    lk_v small = lk_fmadd(x, p, x);
    lk_v t = lk_min(lk_set1(4.0f), a);
    lk_v q = lk_set1(1.95716289e-4f);
    q = lk_fmadd(q, t, lk_set1(-3.04104993e-3f));
    q = lk_fmadd(q, t, lk_set1(2.22182795e-2f));
    q = lk_fmadd(q, t, lk_set1(-1.03913672e-1f));
    q = lk_fmadd(q, t, lk_set1(-6.37202680e-1f));
    q = lk_fmadd(q, t, lk_set1(-1.12766349e+0f));
    q = lk_fmadd(q, t, lk_set1(-1.98611306e-4f));
    lk_v big = lk_copysign(lk_sub(lk_set1(1.0f), lk_exp(q)), x);
    return lk_blend(lk_cmp(a, lk_set1(LK_ERF_POLY_MAX), _CMP_LE_OQ), big, small);
}


// Composite ops run in chunks of LK_CHUNK floats through stack buffers
// (in L1): a vector pass, SLEEF's pass through the shim, a vector pass.
#define LK_CHUNK 512

// log1p through SLEEF, whose log1pf returns inf for x above ~1e38: above
// LK_LOG1P_BIG, log1p(x) = log(x) to far below an ulp, so x is scaled by
// 2^-64 first and 64*ln2 added back.
#define LK_LOG1P_BIG 1.2676506e30f // 2^100
#define LK_64_LN2 44.3614195558365f
LK_TARGET static void lk_log1p_chunked(const float *x, float *y, size_t n) {
    float t[LK_CHUNK];
    for (size_t i = 0; i < n; i += LK_CHUNK) {
        size_t m = n - i < LK_CHUNK ? n - i : LK_CHUNK;
        for (size_t j = 0; j < m; j += LK_W) {
            lk_v v = lk_load_lanes(x + i + j, lk_lanes_upto(m - j));
            lk_m big = lk_cmp(v, lk_set1(LK_LOG1P_BIG), _CMP_GT_OQ);
            lk_storeu(t + j, lk_blend(big, v, lk_mul(v, lk_set1(0x1p-64f))));
        }
        LK_SLEEF_MAP((const void *)LK_SLEEF(log1p), t, t, (m + LK_W - 1) / LK_W);
        for (size_t j = 0; j < m; j += LK_W) {
            lk_lanes k = lk_lanes_upto(m - j);
            lk_v v = lk_load_lanes(x + i + j, k);
            lk_m big = lk_cmp(v, lk_set1(LK_LOG1P_BIG), _CMP_GT_OQ);
            lk_v l = lk_loadu(t + j);
            lk_store_lanes(y + i + j, k, lk_add_where(big, l, lk_set1(LK_64_LN2)));
        }
    }
}

// softplus(x) = max(x, 0) + log1p(e), e = exp(-|x|) in (0, 1]: no overflow,
// and for x << 0 the result keeps e's relative accuracy. For e < 2^-12,
// log1p(e) is e - e^2/2 within 2e-8 relative; that form replaces SLEEF's
// log1p there, which loses accuracy for e near FLT_MIN (measured: 1.8e-7
// relative in softplus at x = -87.3). max_ps gives 0 for NaN x, but
// log1p(exp(NaN)) is NaN, so NaN still comes out.
#define LK_LOG1P_SERIES_MAX 2.44140625e-4f // 2^-12
LK_TARGET static void lk_softplus_chunked(const float *x, float *y, size_t n) {
    float e[LK_CHUNK], l[LK_CHUNK];
    for (size_t i = 0; i < n; i += LK_CHUNK) {
        size_t m = n - i < LK_CHUNK ? n - i : LK_CHUNK;
        for (size_t j = 0; j < m; j += LK_W) {
            lk_v v = lk_load_lanes(x + i + j, lk_lanes_upto(m - j));
            lk_storeu(e + j, lk_exp(lk_neg(lk_abs(v))));
        }
        LK_SLEEF_MAP((const void *)LK_SLEEF(log1p), e, l, (m + LK_W - 1) / LK_W);
        for (size_t j = 0; j < m; j += LK_W) {
            lk_lanes k = lk_lanes_upto(m - j);
            lk_v v = lk_load_lanes(x + i + j, k);
            lk_v ev = lk_loadu(e + j);
            lk_m small = lk_cmp(ev, lk_set1(LK_LOG1P_SERIES_MAX), _CMP_LT_OQ);
            lk_v series = lk_fmadd(lk_mul(ev, lk_set1(-0.5f)), ev, ev);
            lk_v lv = lk_blend(small, lk_loadu(l + j), series);
            lk_store_lanes(y + i + j, k, lk_add(lk_max(v, lk_zero()), lv));
        }
    }
}

// SLEEF's unary f on the whole array (lk_vector.c pads the tail).
#define LK_SLEEF_UNARY(f) lk_sleef_unary(LK_SLEEF_MAP, LK_W, (const void *)LK_SLEEF(f), x, y, n)

// One loop per op, so the op is chosen once per call. The last
// 1..LK_W-1 elements go through masked loads and stores: no byte past n is
// touched (masked-off lanes load as 0 and are computed but never stored).
#define LK_MAP_LOOP(F) \
    do { \
        size_t i = 0; \
        for (; i + LK_W <= n; i += LK_W) lk_storeu(y + i, F(lk_loadu(x + i))); \
        if (i < n) { \
            lk_lanes m = lk_lanes_upto(n - i); \
            lk_store_lanes(y + i, m, F(lk_load_lanes(x + i, m))); \
        } \
    } while (0)
#define LK_UNARY_LOOP(F) do { LK_MAP_LOOP(F); return; } while (0)

LK_TARGET void LK_UNARY_NAME(lk_unary_op op, const float *x, float *y, size_t n) {
    switch (op) {
    case LK_EXP: LK_UNARY_LOOP(lk_exp);
    case LK_LOG: LK_SLEEF_UNARY(log); return;
    case LK_LOG1P: lk_log1p_chunked(x, y, n); return;
    case LK_EXPM1: LK_SLEEF_UNARY(expm1); return;
    case LK_SQRT: LK_UNARY_LOOP(lk_sqrt);
    case LK_ABS: LK_UNARY_LOOP(lk_abs);
    case LK_NEG: LK_UNARY_LOOP(lk_neg);
    case LK_RECIPROCAL: LK_UNARY_LOOP(lk_recip);
    case LK_TANH: LK_UNARY_LOOP(lk_tanh);
    case LK_SIGMOID: LK_UNARY_LOOP(lk_sigmoid);
    case LK_SOFTPLUS: lk_softplus_chunked(x, y, n); return;
    case LK_ERF: LK_UNARY_LOOP(lk_erf);
    case LK_SIN: LK_SLEEF_UNARY(sin); return;
    case LK_COS: LK_SLEEF_UNARY(cos); return;
    case LK_FLOOR: LK_UNARY_LOOP(lk_floor);
    case LK_CEIL: LK_UNARY_LOOP(lk_ceil);
    case LK_ROUND: LK_UNARY_LOOP(lk_round);
    case LK_ISNAN: LK_UNARY_LOOP(lk_isnan);
    case LK_ISINF: LK_UNARY_LOOP(lk_isinf);
    case LK_TAN: LK_SLEEF_UNARY(tan); return;
    case LK_ASIN: LK_SLEEF_UNARY(asin); return;
    case LK_ACOS: LK_SLEEF_UNARY(acos); return;
    case LK_ATAN: LK_SLEEF_UNARY(atan); return;
    case LK_SINH: LK_SLEEF_UNARY(sinh); return;
    case LK_COSH: LK_SLEEF_UNARY(cosh); return;
    case LK_ASINH: LK_SLEEF_UNARY(asinh); return;
    case LK_ACOSH: LK_SLEEF_UNARY(acosh); return;
    case LK_ATANH: LK_SLEEF_UNARY(atanh); return;
    case LK_UNARY_OP_COUNT: return;
    }
}

// max_ps/min_ps return b when either operand is NaN; where a is NaN, take a.
LK_TARGET LK_INLINE lk_v lk_max_nan(lk_v a, lk_v b) {
    return lk_blend(lk_cmp(a, a, _CMP_UNORD_Q), lk_max(a, b), a);
}
LK_TARGET LK_INLINE lk_v lk_min_nan(lk_v a, lk_v b) {
    return lk_blend(lk_cmp(a, a, _CMP_UNORD_Q), lk_min(a, b), a);
}
LK_TARGET LK_INLINE lk_v lk_gt(lk_v a, lk_v b) { return lk_bool(lk_cmp(a, b, _CMP_GT_OQ)); }
LK_TARGET LK_INLINE lk_v lk_ge(lk_v a, lk_v b) { return lk_bool(lk_cmp(a, b, _CMP_GE_OQ)); }
LK_TARGET LK_INLINE lk_v lk_lt(lk_v a, lk_v b) { return lk_bool(lk_cmp(a, b, _CMP_LT_OQ)); }
LK_TARGET LK_INLINE lk_v lk_le(lk_v a, lk_v b) { return lk_bool(lk_cmp(a, b, _CMP_LE_OQ)); }
LK_TARGET LK_INLINE lk_v lk_eq(lk_v a, lk_v b) { return lk_bool(lk_cmp(a, b, _CMP_EQ_OQ)); }
LK_TARGET LK_INLINE lk_v lk_ne(lk_v a, lk_v b) { return lk_bool(lk_cmp(a, b, _CMP_NEQ_UQ)); }
// Logic on truth values (non-zero, NaN included, is true), as 1.0f or 0.0f.
LK_TARGET LK_INLINE lk_v lk_truth(lk_v a) { return lk_ne(a, lk_zero()); }
LK_TARGET LK_INLINE lk_v lk_and(lk_v a, lk_v b) { return lk_mul(lk_truth(a), lk_truth(b)); }
LK_TARGET LK_INLINE lk_v lk_or(lk_v a, lk_v b) { return lk_max(lk_truth(a), lk_truth(b)); }
LK_TARGET LK_INLINE lk_v lk_xor(lk_v a, lk_v b) { return lk_ne(lk_truth(a), lk_truth(b)); }

// The loop for one op F and one stride pair: LA/LB load a full vector,
// MA/MB a masked one (lanes m); a scalar operand is broadcast once (av/bv).
#define LK_BINARY_LOOP(F, LA, LB, MA, MB) \
    do { \
        size_t i = 0; \
        for (; i + LK_W <= n; i += LK_W) lk_storeu(y + i, F(LA, LB)); \
        if (i < n) { \
            lk_lanes m = lk_lanes_upto(n - i); \
            (void)m; \
            lk_store_lanes(y + i, m, F(MA, MB)); \
        } \
    } while (0)

#define LK_BINARY(F) \
    do { \
        if (a_stride && b_stride) { \
            LK_BINARY_LOOP(F, lk_loadu(a + i), lk_loadu(b + i), \
                           lk_load_lanes(a + i, m), lk_load_lanes(b + i, m)); \
        } else if (a_stride) { \
            const lk_v bv = lk_set1(b[0]); \
            LK_BINARY_LOOP(F, lk_loadu(a + i), bv, lk_load_lanes(a + i, m), bv); \
        } else if (b_stride) { \
            const lk_v av = lk_set1(a[0]); \
            LK_BINARY_LOOP(F, av, lk_loadu(b + i), av, lk_load_lanes(b + i, m)); \
        } else { \
            const lk_v av = lk_set1(a[0]), bv = lk_set1(b[0]); \
            LK_BINARY_LOOP(F, av, bv, av, bv); \
        } \
        return; \
    } while (0)

// pow(x, e) for the scalar exponents that need no pow: 0 and 1 exactly as
// C99 has them (pow(NaN, 0) = 1, pow(x, 1) = x); 2, -1 and 0.5 correctly
// rounded (x*x, 1/x, sqrt, with pow's sqrt cases pow(-0, 0.5) = +0 and
// pow(-inf, 0.5) = +inf); 3 and -2 rounded twice (x*x*x and (1/x)^2: within
// 1.2e-7 relative, an intermediate never under- or overflows where the
// result does not). Special values come out as C99's pow gives them.
// Returns 0 for other exponents.
LK_TARGET LK_INLINE lk_v lk_pow_one(lk_v x) { (void)x; return lk_set1(1.0f); }
LK_TARGET LK_INLINE lk_v lk_pow_id(lk_v x) { return x; }
LK_TARGET LK_INLINE lk_v lk_pow2(lk_v x) { return lk_mul(x, x); }
LK_TARGET LK_INLINE lk_v lk_pow3(lk_v x) { return lk_mul(lk_mul(x, x), x); }
LK_TARGET LK_INLINE lk_v lk_pow_m2(lk_v x) { lk_v r = lk_recip(x); return lk_mul(r, r); }
LK_TARGET LK_INLINE lk_v lk_pow_half(lk_v x) {
    lk_v r = lk_add(lk_sqrt(x), lk_zero()); // -0 + +0 = +0
    return lk_blend(lk_cmp(x, lk_set1(-__builtin_inff()), _CMP_EQ_OQ), r, lk_set1(__builtin_inff()));
}
LK_TARGET static int lk_pow_small(const float *x, float e, float *y, size_t n) {
#define LK_POW_CASE(E, F) if (e == E) { LK_MAP_LOOP(F); return 1; }
    LK_POW_CASE(0.0f, lk_pow_one)
    LK_POW_CASE(1.0f, lk_pow_id)
    LK_POW_CASE(2.0f, lk_pow2)
    LK_POW_CASE(3.0f, lk_pow3)
    LK_POW_CASE(-1.0f, lk_recip)
    LK_POW_CASE(-2.0f, lk_pow_m2)
    LK_POW_CASE(0.5f, lk_pow_half)
#undef LK_POW_CASE
    return 0;
}

LK_TARGET void LK_BINARY_NAME(lk_binary_op op, const float *a, int a_stride, const float *b,
                              int b_stride, float *y, size_t n) {
    if (n == 0) return;
    switch (op) {
    case LK_ADD: LK_BINARY(lk_add);
    case LK_SUB: LK_BINARY(lk_sub);
    case LK_MUL: LK_BINARY(lk_mul);
    case LK_DIV: LK_BINARY(lk_div);
    case LK_POW:
        if (a_stride && !b_stride && lk_pow_small(a, b[0], y, n)) return;
        lk_sleef_binary(LK_SLEEF_MAP2, LK_W, (const void *)LK_SLEEF(pow), a, a_stride, b, b_stride, y, n);
        return;
    case LK_MIN: LK_BINARY(lk_min_nan);
    case LK_MAX: LK_BINARY(lk_max_nan);
    case LK_GT: LK_BINARY(lk_gt);
    case LK_GE: LK_BINARY(lk_ge);
    case LK_LT: LK_BINARY(lk_lt);
    case LK_LE: LK_BINARY(lk_le);
    case LK_EQ: LK_BINARY(lk_eq);
    case LK_NE: LK_BINARY(lk_ne);
    case LK_AND: LK_BINARY(lk_and);
    case LK_OR: LK_BINARY(lk_or);
    case LK_XOR: LK_BINARY(lk_xor);
    case LK_FMOD:
    case LK_IMOD:
        // Exact remainders: the C library's, element by element.
        for (size_t i = 0; i < n; i++) {
            float u = a[a_stride ? i : 0], v = b[b_stride ? i : 0];
            y[i] = op == LK_FMOD ? fmodf(u, v) : lk_imod(u, v);
        }
        return;
    case LK_BINARY_OP_COUNT: return;
    }
}

// cond != 0 ? a : b; NEQ_UQ: NaN conditions are true, as NaN != 0 is in C.
LK_TARGET LK_INLINE lk_v lk_pick(lk_v cond, lk_v a, lk_v b) {
    return lk_blend(lk_cmp(cond, lk_zero(), _CMP_NEQ_UQ), b, a);
}

LK_TARGET void LK_SELECT_NAME(const float *cond, const float *a, int a_stride, const float *b,
                              int b_stride, float *y, size_t n) {
    if (n == 0) return;
    const lk_v a0 = lk_set1(a[0]), b0 = lk_set1(b[0]);
    size_t i = 0;
    for (; i + LK_W <= n; i += LK_W) {
        lk_v va = a_stride ? lk_loadu(a + i) : a0;
        lk_v vb = b_stride ? lk_loadu(b + i) : b0;
        lk_storeu(y + i, lk_pick(lk_loadu(cond + i), va, vb));
    }
    if (i < n) {
        lk_lanes m = lk_lanes_upto(n - i);
        lk_v va = a_stride ? lk_load_lanes(a + i, m) : a0;
        lk_v vb = b_stride ? lk_load_lanes(b + i, m) : b0;
        lk_store_lanes(y + i, m, lk_pick(lk_load_lanes(cond + i, m), va, vb));
    }
}

LK_TARGET void LK_AFFINE_CLAMP_NAME(const float *x, float a, float b, float lo, float hi, float *y,
                                    size_t n) {
    const lk_v av = lk_set1(a), bv = lk_set1(b), lov = lk_set1(lo), hiv = lk_set1(hi);
    // max_ps/min_ps return their second operand for NaN: the value (the
    // dispatcher handled NaN bounds).
#define LK_AFFINE_CLAMP(v) lk_min(hiv, lk_max(lov, lk_fmadd(av, v, bv)))
    size_t i = 0;
    for (; i + LK_W <= n; i += LK_W) lk_storeu(y + i, LK_AFFINE_CLAMP(lk_loadu(x + i)));
    if (i < n) {
        lk_lanes m = lk_lanes_upto(n - i);
        lk_store_lanes(y + i, m, LK_AFFINE_CLAMP(lk_load_lanes(x + i, m)));
    }
#undef LK_AFFINE_CLAMP
}

// One loop per predicate (an immediate); operands of stride 0 are broadcast once.
#define LK_SELECT_CMP_LOOP(PRED) \
    do { \
        size_t i = 0; \
        for (; i + LK_W <= n; i += LK_W) { \
            lk_v va = a_stride ? lk_loadu(a + i) : a0, vb = b_stride ? lk_loadu(b + i) : b0; \
            lk_v vt = t_stride ? lk_loadu(t + i) : t0, vf = f_stride ? lk_loadu(f + i) : f0; \
            lk_storeu(y + i, lk_blend(lk_cmp(va, vb, PRED), vf, vt)); \
        } \
        if (i < n) { \
            lk_lanes m = lk_lanes_upto(n - i); \
            lk_v va = a_stride ? lk_load_lanes(a + i, m) : a0, vb = b_stride ? lk_load_lanes(b + i, m) : b0; \
            lk_v vt = t_stride ? lk_load_lanes(t + i, m) : t0, vf = f_stride ? lk_load_lanes(f + i, m) : f0; \
            lk_store_lanes(y + i, m, lk_blend(lk_cmp(va, vb, PRED), vf, vt)); \
        } \
        return; \
    } while (0)

LK_TARGET void LK_SELECT_CMP_NAME(lk_binary_op cmp, const float *a, int a_stride, const float *b,
                                  int b_stride, const float *t, int t_stride, const float *f,
                                  int f_stride, float *y, size_t n) {
    if (n == 0) return;
    const lk_v a0 = lk_set1(a[0]), b0 = lk_set1(b[0]), t0 = lk_set1(t[0]), f0 = lk_set1(f[0]);
    switch (cmp) {
    case LK_GT: LK_SELECT_CMP_LOOP(_CMP_GT_OQ);
    case LK_GE: LK_SELECT_CMP_LOOP(_CMP_GE_OQ);
    case LK_LT: LK_SELECT_CMP_LOOP(_CMP_LT_OQ);
    case LK_LE: LK_SELECT_CMP_LOOP(_CMP_LE_OQ);
    case LK_EQ: LK_SELECT_CMP_LOOP(_CMP_EQ_OQ);
    case LK_NE: LK_SELECT_CMP_LOOP(_CMP_NEQ_UQ);
    default: return;
    }
}

// The functions element-wise formulas are built from (see Expr+GLSL.swift).
// Each has a defined result for every input: NaN in gives NaN out, and the
// edge cases GLSL leaves undefined (log and sqrt of negatives, pow of
// negative bases, min/max of NaN, sin of inf) follow IEEE / C semantics, as
// the CPU primitives do. Arithmetic is fp32.

#define LK_INF uintBitsToFloat(0x7F800000u)
#define LK_NAN uintBitsToFloat(0x7FC00000u)

vec4 lk_where(vec4 condition, vec4 a, vec4 b) { return mix(b, a, notEqual(condition, vec4(0.0))); }

bvec4 lk_either_nan(vec4 a, vec4 b) { return bvec4(uvec4(isnan(a)) | uvec4(isnan(b))); }
vec4 lk_min(vec4 a, vec4 b) { return mix(min(a, b), a + b, lk_either_nan(a, b)); }
vec4 lk_max(vec4 a, vec4 b) { return mix(max(a, b), a + b, lk_either_nan(a, b)); }

vec4 lk_exp(vec4 a) { return exp(a); }

vec4 lk_log(vec4 a) {
    vec4 r = mix(log(a), vec4(-LK_INF), equal(a, vec4(0.0)));
    return mix(r, vec4(LK_NAN), lessThan(a, vec4(0.0)));
}

vec4 lk_sqrt(vec4 a) { return mix(sqrt(a), vec4(LK_NAN), lessThan(a, vec4(0.0))); }

vec4 lk_reciprocal(vec4 a) { return 1.0 / a; }

// log(1 + u) and exp(u) - 1 lose relative accuracy only where the result is
// below ~1e-7 in magnitude, inside the parity rule's absolute floor.
vec4 lk_log1p(vec4 a) { return lk_log(1.0 + a); }
vec4 lk_expm1(vec4 a) { return exp(a) - 1.0; }

// exp(-|x|) never overflows; the two branches are the same function.
vec4 lk_sigmoid(vec4 a) {
    vec4 e = exp(-abs(a));
    vec4 s = 1.0 / (1.0 + e);
    return mix(e * s, s, greaterThanEqual(a, vec4(0.0)));
}

vec4 lk_tanh(vec4 a) {
    vec4 e = exp(-2.0 * abs(a));
    vec4 t = (1.0 - e) / (1.0 + e);
    return mix(t, -t, lessThan(a, vec4(0.0)));
}

// max(x, 0) + log(1 + exp(-|x|)): no overflow for large x.
vec4 lk_softplus(vec4 a) {
    return mix(vec4(0.0), a, greaterThan(a, vec4(0.0))) + lk_log1p(exp(-abs(a)));
}

// Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7.
vec4 lk_erf(vec4 a) {
    vec4 z = abs(a);
    vec4 t = 1.0 / (1.0 + 0.3275911 * z);
    vec4 p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    vec4 r = 1.0 - p * exp(-z * z);
    return mix(r, -r, lessThan(a, vec4(0.0)));
}

// a - k * 2pi with k = round(a / 2pi), Cody-Waite: 2pi in three parts, the
// first two of 8 and 10 significant bits, so k times each is exact for |k|
// up to 2^14 (fp16's 65504 is k = 10425). A GPU's sin and cos are accurate
// near zero only: NVIDIA's gave sin(65504) = 0.97705 for 0.97538.
vec4 lk_reduce_2pi(vec4 a) {
    precise vec4 k = round(a * 0.15915494309189535);
    precise vec4 r = a - k * 6.28125;
    r = r - k * 0.0019340515136718750;
    r = r - k * 1.2556658930407139e-06;
    return r;
}
vec4 lk_sin(vec4 a) { return mix(sin(lk_reduce_2pi(a)), vec4(LK_NAN), isinf(a)); }
vec4 lk_cos(vec4 a) { return mix(cos(lk_reduce_2pi(a)), vec4(LK_NAN), isinf(a)); }
vec4 lk_tan(vec4 a) { return mix(tan(lk_reduce_2pi(a)), vec4(LK_NAN), isinf(a)); }

// GLSL leaves asin, acos, acosh and atanh undefined outside their domains,
// and defines asinh and acosh by log(x + sqrt(x * x +- 1)), which cancels to
// log(0) for large negative x and overflows past 1e19: written out here.
// Outside [-1, 1] or NaN (clamp of NaN may give a bound).
bvec4 lk_not_unit(vec4 a) { return bvec4(uvec4(greaterThan(abs(a), vec4(1.0))) | uvec4(isnan(a))); }
vec4 lk_asin(vec4 a) { return mix(asin(clamp(a, -1.0, 1.0)), vec4(LK_NAN), lk_not_unit(a)); }
vec4 lk_acos(vec4 a) { return mix(acos(clamp(a, -1.0, 1.0)), vec4(LK_NAN), lk_not_unit(a)); }
vec4 lk_atan(vec4 a) { return atan(a); }
vec4 lk_sinh(vec4 a) { return sinh(a); }
vec4 lk_cosh(vec4 a) { return cosh(a); }
// log(2t) for t past 2^24, where sqrt(t * t + 1) is t in float.
vec4 lk_arc_magnitude(vec4 t, float unit) {
    vec4 near = log(t + sqrt(t * t + unit));
    return mix(near, log(t) + log(2.0), greaterThan(t, vec4(16777216.0)));
}
vec4 lk_asinh(vec4 a) {
    vec4 r = lk_arc_magnitude(abs(a), 1.0);
    return mix(r, -r, lessThan(a, vec4(0.0)));
}
vec4 lk_acosh(vec4 a) { return mix(lk_arc_magnitude(a, -1.0), vec4(LK_NAN), lessThan(a, vec4(1.0))); }
// (log(1 + x) - log(1 - x)) / 2: +-inf at +-1, NaN past them (lk_log of a negative).
vec4 lk_atanh(vec4 a) { return 0.5 * (lk_log1p(a) - lk_log1p(-a)); }

// C powf: exp2(b * log2|a|), with the sign of odd integer powers of negative
// bases, NaN for other powers of negative bases, and pow(a, 0) = pow(1, b) = 1.
vec4 lk_pow(vec4 a, vec4 b) {
    vec4 magnitude = exp2(b * log2(abs(a)));
    bvec4 integer = equal(b, floor(b));
    bvec4 odd = equal(mod(b, 2.0), vec4(1.0));
    bvec4 negative = lessThan(a, vec4(0.0));
    vec4 r = mix(magnitude, -magnitude, bvec4(uvec4(negative) & uvec4(odd)));
    // C99: pow(-inf, b) is +inf or +0 for b not an odd integer, not NaN.
    r = mix(r, vec4(LK_NAN), bvec4(uvec4(negative) & ~uvec4(integer) & ~uvec4(isinf(a))));
    r = mix(r, a + b, lk_either_nan(a, b));  // exp2 of NaN is not reliably NaN
    return mix(r, vec4(1.0), bvec4(uvec4(equal(b, vec4(0.0))) | uvec4(equal(a, vec4(1.0)))));
}

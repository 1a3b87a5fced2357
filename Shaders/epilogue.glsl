// A convolution's or GEMM's fused epilogue (Swift: Epilogue): per-element
// stages of the catalog's formulas, an optional residual add, more stages,
// applied to the fp32 sums (bias included) before the one fp16 rounding
// store. Any kernel that includes this file calls
//
//   vec4 lk_epilogue(vec4 acc, uint slice, ivec3 pos)
//
// on each output texel (four channels of output slice `slice`, at image
// coordinate `pos`); without LK_EPILOGUE it returns `acc`. LayerKit defines,
// for a kernel with an epilogue:
//   LK_EPILOGUE                    1
//   LK_EPILOGUE_VALUES_BINDING     the values buffer's binding, after the
//                                  kernel's own images and buffers
//   LK_EPILOGUE_RESIDUAL_BINDING   the residual image's (with LK_EPILOGUE_RESIDUAL)
//   LK_EPILOGUE_FUNCTIONS          one GLSL function per stage (Expr+GLSL.swift)
//   LK_EPILOGUE_BEFORE(x), LK_EPILOGUE_AFTER(x)
//                                  the stages before and after the residual add
//   LK_EPILOGUE_WEIGHTS            the index of the first per-channel value
// The values buffer: [0] zero (the formulas' `lk_zero`, a zero the compiler
// cannot fold; see Expr.glslLiteral), [1] the output's slices, then from [4]
// the scalar parameters, then from LK_EPILOGUE_WEIGHTS each per-channel
// value set, slices * 4 floats (zero past the last channel).
#ifndef LK_EPILOGUE_GLSL
#define LK_EPILOGUE_GLSL

#ifdef LK_EPILOGUE
#include "ops.glsl"

layout(std430, binding = LK_EPILOGUE_VALUES_BINDING) readonly buffer EpilogueValues { float lk_epilogue_values[]; };
#ifdef LK_EPILOGUE_RESIDUAL
layout(rgba16f, binding = LK_EPILOGUE_RESIDUAL_BINDING) readonly uniform image2DArray lk_epilogue_residual;
#endif

#define lk_zero lk_epilogue_values[0]

uint lk_epilogue_slice;

float lk_epilogue_param(int i) { return lk_epilogue_values[4 + i]; }

vec4 lk_epilogue_weight(int k) {
    uint base = uint(LK_EPILOGUE_WEIGHTS) + (uint(k) * uint(lk_epilogue_values[1]) + lk_epilogue_slice) * 4u;
    return vec4(lk_epilogue_values[base], lk_epilogue_values[base + 1u], lk_epilogue_values[base + 2u],
                lk_epilogue_values[base + 3u]);
}

LK_EPILOGUE_FUNCTIONS

vec4 lk_epilogue(vec4 acc, uint slice, ivec3 pos) {
    lk_epilogue_slice = slice;
    vec4 x = LK_EPILOGUE_BEFORE(acc);
#ifdef LK_EPILOGUE_RESIDUAL
    // The residual as the unfused Add reads it: the fp16 value in its image.
    precise vec4 sum = x + imageLoad(lk_epilogue_residual, pos);
    x = sum;
#endif
    return LK_EPILOGUE_AFTER(x);
}
#else
vec4 lk_epilogue(vec4 acc, uint slice, ivec3 pos) { return acc; }
#endif

#endif

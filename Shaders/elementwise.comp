#version 450
// The one template for every per-element op on slice images.
//
// The op's body is a GLSL expression over `x` (the texel, vec4, loaded from
// fp16 and computed in fp32), `param(i)` (scalar parameters) and `weight(k)`
// (per-channel weight set k, as a vec4 of this texel's four channels).
// LayerKit defines LK_BODY(x) when it instantiates the template; on its own
// the template is the identity, so offline compilers can check it.
#extension GL_GOOGLE_include_directive : require
// IEEE results for ±0, ±inf and NaN: LayerKit defines LK_IEEE where the
// device offers SignedZeroInfNanPreserve (VK_KHR_shader_float_controls), so
// drivers that honour it keep `x * 0` and friends. lavapipe (Mesa 22.3)
// folds literal zeros even so, hence `lk_zero` below; the formulas' stages
// are also `precise` (NoContraction), which is what keeps `x - x` there.
#ifdef LK_IEEE
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
#endif
#include "layerkit.glsl"
#include "ops.glsl"

#ifndef LK_BODY
#define LK_BODY(x) (x)
#endif

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
// Weight set k for channel c sits at k * slices * 4 + c (padded per set).
layout(std430, binding = 2) readonly buffer Weights { float weights[]; };
// `zero` is always 0: formulas' zero literals read it (as `lk_zero`), since
// the driver folds `x * 0.0`, `x / 0.0`, `x + 0.0` and `0.0 - x` even under
// `precise` and SignedZeroInfNanPreserve (lavapipe, measured), but cannot
// fold a value it does not know.
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; float params[8]; float zero; } shape;
#define lk_zero shape.zero

uint lk_slice;

float param(int i) { return shape.params[i]; }

vec4 weight(int k) {
    uint base = uint(k) * shape.slices * 4u + lk_slice * 4u;
    return vec4(weights[base], weights[base + 1u], weights[base + 2u], weights[base + 3u]);
}

// Helper functions of the body (a fused chain puts one per stage here).
#ifdef LK_FUNCTIONS
LK_FUNCTIONS
#endif

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    lk_slice = id.z % shape.slices;
    vec4 x = imageLoad(source, ivec3(id));
    vec4 y = LK_BODY(x);
    // Padding lanes stay zero whatever the op maps zero to.
    y = mix(vec4(0.0), y, lk_channel_lanes(lk_slice, shape.channels));
    imageStore(destination, ivec3(id), lk_round_half(y));
}

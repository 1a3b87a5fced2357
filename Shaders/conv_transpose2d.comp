#version 450
// ONNX ConvTranspose (2-D, and 1-D as a W = 1 image) on slice images: one
// invocation per output texel, four output channels at (x, y) of one batch
// item, each gathering the input cells that reach it: input cell iy reaches
// output row iy * strideY - padTop + ky * dilationY, so output row y reads
// iy = (y + padTop - ky * dilationY) / strideY where that divides exactly
// and lies in the input (likewise columns). Weights are ONNX's
// [C, M/group, kH, kW] floats; bias one vec4 per output slice. Sums in fp32
// from the bias, stores rounded to nearest fp16; padding lanes stay zero.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(std430, binding = 2) readonly buffer Weights { float weights[]; };
layout(std430, binding = 3) readonly buffer Bias { vec4 bias[]; };
layout(push_constant) uniform Geometry {
    LK_SHAPE_FIELDS;  // the output's
    uint inWidth; uint inHeight; uint inChannels; uint inSlices;
    uint kernelWidth; uint kernelHeight;
    uint strideX; uint strideY; uint dilationX; uint dilationY;
    int padLeft; int padTop;
    uint groupInChannels; uint groupOutChannels;
} p;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= p.width || id.y >= p.height || id.z >= p.layers) return;
    uint os = id.z % p.slices;
    uint inLayer0 = (id.z / p.slices) * p.inSlices;
    uint taps = p.kernelWidth * p.kernelHeight;
    vec4 acc = bias[os];
    for (uint lane = 0u; lane < 4u; lane++) {
        uint oc = os * 4u + lane;
        if (oc >= p.channels) break;
        uint g = oc / p.groupOutChannels, o = oc % p.groupOutChannels;
        uint firstIn = g * p.groupInChannels;
        for (uint ky = 0u; ky < p.kernelHeight; ky++) {
            int ty = int(id.y) + p.padTop - int(ky * p.dilationY);
            if (ty < 0 || uint(ty) % p.strideY != 0u) continue;
            uint iy = uint(ty) / p.strideY;
            if (iy >= p.inHeight) continue;
            for (uint kx = 0u; kx < p.kernelWidth; kx++) {
                int tx = int(id.x) + p.padLeft - int(kx * p.dilationX);
                if (tx < 0 || uint(tx) % p.strideX != 0u) continue;
                uint ix = uint(tx) / p.strideX;
                if (ix >= p.inWidth) continue;
                uint tap = ky * p.kernelWidth + kx;
                for (uint i = 0u; i < p.groupInChannels; i++) {
                    uint ic = firstIn + i;
                    float x = imageLoad(source, ivec3(ix, iy, inLayer0 + ic / 4u))[ic % 4u];
                    acc[lane] += weights[((ic * p.groupOutChannels) + o) * taps + tap] * x;
                }
            }
        }
    }
    acc = mix(vec4(0.0), acc, lk_channel_lanes(os, p.channels));
    imageStore(destination, ivec3(id), lk_round_half(acc));
}

#version 450
// ONNX Conv (2-D) on slice images: one invocation per output texel, that is
// four output channels at (x, y) of one batch item. Sums in fp32 from the
// bias, applies the fused epilogue if any (epilogue.glsl), stores rounded
// to nearest fp16; padding lanes stay zero.
//
// One of three forms is defined (Convolution+GPU.swift arranges the weights
// for it):
//   LK_CONV_DENSE      group 1: weights[((os * taps + tap) * inSlices + is)]
//                      is a mat4 with w[4os + o][4is + i] at column i, row o,
//                      so each tap of each input slice is one mat4 * vec4.
//                      Padding lanes of the input are zero, so C % 4 != 0
//                      needs nothing special.
//   LK_CONV_DEPTHWISE  group = C = M: weights[os * taps + tap] is a vec4,
//                      multiplied lane by lane with input slice os.
//   LK_CONV_GROUPED    any other group: ONNX's [M, C/group, kH, kW] floats;
//                      each output lane sums its own group's input channels.
// (None defined: the dense form, so offline compilers can check the file.)
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

#if !defined(LK_CONV_DEPTHWISE) && !defined(LK_CONV_GROUPED)
#define LK_CONV_DENSE 1
#endif

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
#if defined(LK_CONV_DENSE)
layout(std430, binding = 2) readonly buffer Weights { mat4 weights[]; };
#elif defined(LK_CONV_DEPTHWISE)
layout(std430, binding = 2) readonly buffer Weights { vec4 weights[]; };
#else
layout(std430, binding = 2) readonly buffer Weights { float weights[]; };
#endif
layout(std430, binding = 3) readonly buffer Bias { vec4 bias[]; };
layout(push_constant) uniform Geometry {
    LK_SHAPE_FIELDS;  // the output's
    uint inWidth; uint inHeight; uint inChannels; uint inSlices;
    uint kernelWidth; uint kernelHeight;
    uint strideX; uint strideY; uint dilationX; uint dilationY;
    int padLeft; int padTop;
    uint groupInChannels; uint groupOutChannels;
} p;

// The fused epilogue, when LayerKit defines one (Shaders/epilogue.glsl).
#include "epilogue.glsl"

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= p.width || id.y >= p.height || id.z >= p.layers) return;
    uint os = id.z % p.slices;
    uint inLayer0 = (id.z / p.slices) * p.inSlices;
    int x0 = int(id.x * p.strideX) - p.padLeft;
    int y0 = int(id.y * p.strideY) - p.padTop;
    uint taps = p.kernelWidth * p.kernelHeight;
    vec4 acc = bias[os];
    for (uint ky = 0u; ky < p.kernelHeight; ky++) {
        int iy = y0 + int(ky * p.dilationY);
        if (iy < 0 || iy >= int(p.inHeight)) continue;
        for (uint kx = 0u; kx < p.kernelWidth; kx++) {
            int ix = x0 + int(kx * p.dilationX);
            if (ix < 0 || ix >= int(p.inWidth)) continue;
            uint tap = ky * p.kernelWidth + kx;
#if defined(LK_CONV_DENSE)
            uint base = (os * taps + tap) * p.inSlices;
            for (uint is = 0u; is < p.inSlices; is++) {
                acc += weights[base + is] * imageLoad(source, ivec3(ix, iy, inLayer0 + is));
            }
#elif defined(LK_CONV_DEPTHWISE)
            acc += weights[os * taps + tap] * imageLoad(source, ivec3(ix, iy, inLayer0 + os));
#else
            for (uint lane = 0u; lane < 4u; lane++) {
                uint oc = os * 4u + lane;
                if (oc >= p.channels) break;
                uint firstIn = (oc / p.groupOutChannels) * p.groupInChannels;
                for (uint i = 0u; i < p.groupInChannels; i++) {
                    uint ic = firstIn + i;
                    float x = imageLoad(source, ivec3(ix, iy, inLayer0 + ic / 4u))[ic % 4u];
                    acc[lane] += weights[(oc * p.groupInChannels + i) * taps + tap] * x;
                }
            }
#endif
        }
    }
    acc = lk_epilogue(acc, os, ivec3(id));
    acc = mix(vec4(0.0), acc, lk_channel_lanes(os, p.channels));
    imageStore(destination, ivec3(id), lk_round_half(acc));
}

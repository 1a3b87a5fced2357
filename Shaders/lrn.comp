#version 450
// ONNX LRN (local response normalization across channels) on a slice image:
// y = x / (bias + alpha / size * sum of x^2 over channels
// c - floor((size - 1) / 2) ... c + ceil((size - 1) / 2))^beta, in fp32.
//
// One invocation per texel, four channels at a time, reading the
// neighbouring channels from the item's other slices.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;
    int before; int after;  // channels below and above c in the window
    float alphaOverSize; float beta; float bias;
} shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint slice = lk_slice_of(id.z, shape.slices);
    uint base = id.z - slice;  // the item's first layer
    vec4 x = imageLoad(source, ivec3(id));
    vec4 sums = vec4(0.0);
    for (int lane = 0; lane < 4; lane++) {
        int c = int(slice) * 4 + lane;
        int first = max(c - shape.before, 0), last = min(c + shape.after, int(shape.channels) - 1);
        float sum = 0.0;
        for (int k = first; k <= last; k++) {
            float v = imageLoad(source, ivec3(id.xy, base + uint(k / 4)))[k % 4];
            sum += v * v;
        }
        sums[lane] = sum;
    }
    vec4 y = x / pow(vec4(shape.bias) + shape.alphaOverSize * sums, vec4(shape.beta));
    y = mix(vec4(0.0), y, lk_channel_lanes(slice, shape.channels));
    imageStore(destination, ivec3(id), lk_round_half(y));
}

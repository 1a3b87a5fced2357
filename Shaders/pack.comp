#version 450
// Tensor (fp32 NCHW storage buffer) -> slice image (rgba16f 2D array).
// One invocation per texel: it gathers the texel's four channels and writes
// zeros into the lanes past the last channel.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout(std430, binding = 0) readonly buffer Source { float source[]; };
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; } shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint n = id.z / shape.slices;
    uint firstChannel = (id.z % shape.slices) * 4u;
    uint plane = shape.width * shape.height;
    uint pixel = id.y * shape.width + id.x;
    vec4 texel = vec4(0.0);
    for (uint lane = 0u; lane < 4u; ++lane) {
        uint c = firstChannel + lane;
        if (c < shape.channels) texel[lane] = source[(n * shape.channels + c) * plane + pixel];
    }
    imageStore(destination, ivec3(id), lk_round_half(texel));
}

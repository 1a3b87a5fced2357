#version 450
// Slice image (rgba16f 2D array) -> tensor (fp32 NCHW storage buffer).
// Padding lanes past the last channel are not written anywhere.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(std430, binding = 1) writeonly buffer Destination { float destination[]; };
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; } shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint n = id.z / shape.slices;
    uint firstChannel = (id.z % shape.slices) * 4u;
    uint plane = shape.width * shape.height;
    uint pixel = id.y * shape.width + id.x;
    vec4 texel = imageLoad(source, ivec3(id));
    for (uint lane = 0u; lane < 4u; ++lane) {
        uint c = firstChannel + lane;
        if (c < shape.channels) destination[(n * shape.channels + c) * plane + pixel] = texel[lane];
    }
}

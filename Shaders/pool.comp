#version 450
// 2D max and average pooling (ONNX MaxPool, AveragePool, and the global
// pools as one window over the whole plane).
//
// One invocation per output texel, four channels at a time: it walks its
// window over the input plane of the same array layer, in fp32. Window
// (y, x) covers input rows y * strideY - padTop + i * dilationY (i <
// kernelHeight), and likewise columns; the padded extent is rows
// [-padTop, inHeight + padBottom). LK_POOL_KIND: 0 max (an empty window is
// -inf), 1 average over the input cells, 2 average with pad cells counted.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

#ifndef LK_POOL_KIND
#define LK_POOL_KIND 0
#endif

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output; the input has the same batch and channels
    int inWidth; int inHeight;
    int kernelWidth; int kernelHeight;
    int strideX; int strideY;
    int dilationX; int dilationY;
    int padLeft; int padTop; int padRight; int padBottom;
} shape;

// The number of cells start + i * dilation (i < kernel) inside [lo, hi).
int lk_cells_inside(int start, int dilation, int kernel, int lo, int hi) {
    if (hi - 1 < start) return 0;
    int first = start >= lo ? 0 : (lo - start + dilation - 1) / dilation;
    int last = min((hi - 1 - start) / dilation, kernel - 1);
    return max(last - first + 1, 0);
}

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    int left = int(id.x) * shape.strideX - shape.padLeft;
    int top = int(id.y) * shape.strideY - shape.padTop;
#if LK_POOL_KIND == 0
    vec4 result = vec4(uintBitsToFloat(0xFF800000u));
#else
    vec4 result = vec4(0.0);
#endif
    for (int ky = 0; ky < shape.kernelHeight; ky++) {
        int y = top + ky * shape.dilationY;
        if (y < 0 || y >= shape.inHeight) continue;
        for (int kx = 0; kx < shape.kernelWidth; kx++) {
            int x = left + kx * shape.dilationX;
            if (x < 0 || x >= shape.inWidth) continue;
            vec4 v = imageLoad(source, ivec3(x, y, id.z));
#if LK_POOL_KIND == 0
            // GLSL's max() of a NaN is undefined; onnxruntime's MaxPool
            // propagates NaN, so a NaN cell or result stays NaN (v + result).
            result = mix(max(result, v), v + result, bvec4(uvec4(isnan(v)) | uvec4(isnan(result))));
#else
            result += v;
#endif
        }
    }
#if LK_POOL_KIND == 1
    int count = lk_cells_inside(top, shape.dilationY, shape.kernelHeight, 0, shape.inHeight)
              * lk_cells_inside(left, shape.dilationX, shape.kernelWidth, 0, shape.inWidth);
    result = count > 0 ? result / float(count) : vec4(0.0);
#elif LK_POOL_KIND == 2
    int count = lk_cells_inside(top, shape.dilationY, shape.kernelHeight, -shape.padTop, shape.inHeight + shape.padBottom)
              * lk_cells_inside(left, shape.dilationX, shape.kernelWidth, -shape.padLeft, shape.inWidth + shape.padRight);
    result = count > 0 ? result / float(count) : vec4(0.0);
#endif
    // Padding lanes stay zero (an empty max window would make them -inf).
    result = mix(vec4(0.0), result, lk_channel_lanes(lk_slice_of(id.z, shape.slices), shape.channels));
    imageStore(destination, ivec3(id), lk_round_half(result));
}

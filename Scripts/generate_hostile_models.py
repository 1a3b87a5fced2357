#!/usr/bin/env python3
"""Hostile single-node models for LayerKit's importer (issue 27): each op's
integer attributes and constant integer inputs (pads, axes, starts/ends/
steps, sizes, repeats, shapes, split, indices, kernel_shape, strides,
dilations, group, blocksize...) set to INT64_MIN, INT64_MAX and 2^62. No
expected outputs: `layerkit inspect` and `run` must load each or refuse it
with an error naming the node, never trap (HostileKernelTests). The fold_*
models fold integer ops (Range, Add, Sub, Mul, Div, Neg, Abs, ReduceProd,
ConstantOfShape) at load on such values into a Reshape's shape. Also
zero_batch.onnx, a Relu on N x 3 x 4 x 4 (a symbolic batch) for the
zero-size input message.

Writes Tests/LayerKitTests/Fixtures/hostile/ (old files removed first).
Run from the repository root with any Python that has onnx and numpy:
    python -P Scripts/generate_hostile_models.py
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MIN, MAX = -2**63, 2**63 - 1
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures', 'hostile')


def model(name, op, x_shape, attrs={}, inits=(), inputs_extra=(), opset=18, n_out=1):
    """One node from x (float, `x_shape`) and constant inputs to y0..."""
    node = helper.make_node(op, ['x'] + list(inputs_extra), [f'y{i}' for i in range(n_out)], name=name, **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info('x', TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info(f'y{i}', TensorProto.FLOAT, None) for i in range(n_out)],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], producer_name='layerkit-hostile')
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, f'{name}.onnx'))


def folded(name, op, constants, attrs={}):
    """`op` folded at load from int64 `constants` into r, then Reshape(x, r): the importer's integer
    arithmetic on values from the file (Range's count, Mul, Neg, Abs, ConstantOfShape's dims)."""
    inits = [numpy_helper.from_array(np.asarray(v, dtype=np.int64), f'c{k}') for k, v in enumerate(constants)]
    nodes = [helper.make_node(op, [t.name for t in inits], ['r'], name=name, **attrs),
             helper.make_node('Reshape', ['x', 'r'], ['y0'], name=f'{name}_reshape')]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 2, 3, 4])],
                          [helper.make_tensor_value_info('y0', TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 18)], producer_name='layerkit-hostile')
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, f'{name}.onnx'))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    model('zero_batch', 'Relu', ['N', 3, 4, 4])
    folded('fold_range_full', 'Range', [MIN, MAX, 1])
    folded('fold_range_step', 'Range', [MAX, MIN, -2**62])
    folded('fold_mul', 'Mul', [[MAX, 2], [2, 1]])
    folded('fold_add', 'Add', [[MAX, 1], [1, 1]])
    folded('fold_sub', 'Sub', [[MIN, 1], [1, 1]])
    folded('fold_neg', 'Neg', [[MIN, 1]])
    folded('fold_abs', 'Abs', [[MIN, 1]])
    folded('fold_div', 'Div', [[MIN, 24], [-1, 1]])
    folded('fold_reduceprod', 'ReduceProd', [[MAX, 4, 2**62]], {'keepdims': 1})
    folded('fold_constantofshape', 'ConstantOfShape', [[2**40, 2**40]])
    I = lambda n, v: numpy_helper.from_array(np.asarray(v, dtype=np.int64), n)
    for k, v in [('min', MIN), ('max', MAX), ('big', 2**62)]:
        model(f'pad_{k}', 'Pad', [1,2,3,4], inits=[I('p',[0,0,v,0,0,0,0,0])], inputs_extra=['p'])
        model(f'slice_start_{k}', 'Slice', [1,2,3,4], inits=[I('s',[v]),I('e',[2]),I('a',[3])], inputs_extra=['s','e','a'])
        model(f'slice_end_{k}', 'Slice', [1,2,3,4], inits=[I('s',[0]),I('e',[v]),I('a',[3])], inputs_extra=['s','e','a'])
        model(f'slice_step_{k}', 'Slice', [1,2,3,4], inits=[I('s',[0]),I('e',[4]),I('a',[3]),I('t',[v])], inputs_extra=['s','e','a','t'])
        model(f'slice_axis_{k}', 'Slice', [1,2,3,4], inits=[I('s',[0]),I('e',[2]),I('a',[v])], inputs_extra=['s','e','a'])
        model(f'tile_{k}', 'Tile', [1,2,3,4], inits=[I('r',[1,1,v,2])], inputs_extra=['r'])
        model(f'expand_{k}', 'Expand', [1,2,3,1], inits=[I('r',[1,2,3,v])], inputs_extra=['r'])
        model(f'reshape_{k}', 'Reshape', [1,2,3,4], inits=[I('r',[v,-1])], inputs_extra=['r'])
        model(f'transpose_{k}', 'Transpose', [1,2,3,4], {'perm':[0,1,3,v]})
        model(f'softmax_{k}', 'Softmax', [1,2,3,4], {'axis':v})
        model(f'concat_{k}', 'Concat', [1,2,3,4], {'axis':v})
        model(f'flatten_{k}', 'Flatten', [1,2,3,4], {'axis':v})
        model(f'split_{k}', 'Split', [1,2,3,4], {'axis':1}, inits=[I('s',[v,1])], inputs_extra=['s'], n_out=2)
        model(f'gather_{k}', 'Gather', [1,2,3,4], {'axis':1}, inits=[I('i',[v])], inputs_extra=['i'])
        model(f'gather_axis_{k}', 'Gather', [1,2,3,4], {'axis':v}, inits=[I('i',[0])], inputs_extra=['i'])
        model(f'reduce_{k}', 'ReduceSum', [1,2,3,4], inits=[I('a',[v])], inputs_extra=['a'])
        model(f'reducemean_{k}', 'ReduceMean', [1,2,3,4], inits=[I('a',[v])], inputs_extra=['a'])
        model(f'squeeze_{k}', 'Squeeze', [1,2,3,4], inits=[I('a',[v])], inputs_extra=['a'])
        model(f'unsqueeze_{k}', 'Unsqueeze', [1,2,3,4], inits=[I('a',[v])], inputs_extra=['a'])
        model(f'resize_{k}', 'Resize', [1,2,3,4], {'mode':'nearest'}, inits=[I('sz',[1,2,3,v])], inputs_extra=['','','sz'])
        model(f'd2s_{k}', 'DepthToSpace', [1,8,3,4], {'blocksize':v})
        model(f's2d_{k}', 'SpaceToDepth', [1,2,4,4], {'blocksize':v})
        for attr in ['kernel_shape','strides','dilations','pads']:
            base = {'kernel_shape':[2,2],'strides':[1,1],'dilations':[1,1],'pads':[0,0,0,0]}
            base[attr] = [v] + base[attr][1:]
            model(f'maxpool_{attr}_{k}', 'MaxPool', [1,2,6,6], dict(base))
            model(f'avgpool_{attr}_{k}', 'AveragePool', [1,2,6,6], {a:b for a,b in base.items() if a!='dilations'} if attr!='dilations' else dict(base), opset=19)
            cb = dict(base); 
            model(f'conv_{attr}_{k}', 'Conv', [1,2,6,6], cb, inits=[numpy_helper.from_array(np.ones((2,2,2,2),np.float32),'w')], inputs_extra=['w'])
        model(f'conv_group_{k}', 'Conv', [1,2,6,6], {'group':v}, inits=[numpy_helper.from_array(np.ones((2,1,2,2),np.float32),'w')], inputs_extra=['w'])
        model(f'lppool_p_{k}', 'LpPool', [1,2,6,6], {'kernel_shape':[2,2],'p':v})
        model(f'topk_{k}', 'TopK', [1,2,3,4], {'axis':-1}, inits=[I('k',[v])], inputs_extra=['k'], n_out=2)
        model(f'cumsum_{k}', 'CumSum', [1,2,3,4], inits=[I('a',v)], inputs_extra=['a'])
        model(f'argmax_{k}', 'ArgMax', [1,2,3,4], {'axis':v})
        model(f'lrn_{k}', 'LRN', [1,2,3,4], {'size':v})
        model(f'hardmax_{k}', 'Hardmax', [1,2,3,4], {'axis':v})
        model(f'layernorm_{k}', 'LayerNormalization', [1,2,3,4], {'axis':v}, inits=[numpy_helper.from_array(np.ones(4,np.float32),'g')], inputs_extra=['g'])
        model(f'gemm_{k}', 'Gemm', [2,3], {'transA':v}, inits=[numpy_helper.from_array(np.ones((3,3),np.float32),'b')], inputs_extra=['b'])

if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Whole models as users export them: torchvision architectures (random,
seeded weights; eval mode) through BOTH PyTorch exporters, each written as a
case of the onnx backend-test layout with onnxruntime's outputs and the
fp16-twin GPU tolerance (Scripts/model_zoo_common.py).

    /work/venv/bin/python Scripts/export_torchvision.py [--out DIR] [--narrow] [--only NAME,...]

Full size (default, into .build/model-zoo/full, NOT committed: tens of MB and
torch is not installed in CI): resnet18, mobilenet_v2, mobilenet_v3_small,
efficientnet_b0 (and efficientnet_b0_swish: SiLU as a `layerkit` domain Swish
node, TorchScript exporter only), squeezenet1_1, shufflenet_v2_x0_5,
regnet_y_400mf, densenet121 at 1x3x224x224, a fast style-transfer network
(Johnson et al.) at 1x3x256x256, a tiny VisionTransformer at 1x3x32x32.

--narrow (into Tests/LayerKitTests/Fixtures/onnx-cases/zoo, committed: the
ONNXCaseTests run them on both backends in `make test`): the same
architectures, narrow enough to keep the whole folder at a few MB, built from
torchvision's own classes (ResNet's BasicBlock and _make_layer,
MobileNetV2(width_mult), MobileNetV3 small at width 0.25, EfficientNet's
MBConv config at width 0.25, SqueezeNet's Fire modules, ShuffleNetV2 and
DenseNet with small stages) at 64x64 inputs.

Case names: <model>_<exporter>, exporter `torchscript` (torch.onnx.export
dynamo=False) or `dynamo` (dynamo=True, needs onnxscript). Weights: torch's
default init from torch.manual_seed(0), then BatchNorm's running statistics
measured on random batches (train mode, momentum None, no grad) and its
affine parameters jittered, so that eval-mode activations stay in a sane range
at every depth and BN is not the identity.
"""

import argparse
import copy
import io
import json
import os
import sys
import warnings

import torch.library

torch.library.register_fake = lambda *a, **k: (lambda f: f)  # torchvision's compiled ops don't load against CPU torch

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402
from torch import nn  # noqa: E402
from torchvision.models import (densenet, efficientnet, mobilenetv2, mobilenetv3, regnet, resnet,  # noqa: E402
                                shufflenetv2, squeezenet)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE]
from model_zoo_common import save_case  # noqa: E402

warnings.filterwarnings("ignore")


# ---------------------------------------------------------------- models

class ConvLayer(nn.Module):
    """Reflection padding then a convolution (the fast style-transfer net's unit)."""

    def __init__(self, cin, cout, kernel, stride):
        super().__init__()
        self.pad = nn.ReflectionPad2d(kernel // 2)
        self.conv = nn.Conv2d(cin, cout, kernel, stride)

    def forward(self, x):
        return self.conv(self.pad(x))


class ResidualBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.in1 = ConvLayer(c, c, 3, 1), nn.InstanceNorm2d(c, affine=True)
        self.conv2, self.in2 = ConvLayer(c, c, 3, 1), nn.InstanceNorm2d(c, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu(self.in1(self.conv1(x)))
        return x + self.in2(self.conv2(y))


class UpsampleConv(nn.Module):
    """Nearest upsampling by 2, then ConvLayer (Johnson et al.'s decoder, as in pytorch/examples)."""

    def __init__(self, cin, cout, kernel):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv = ConvLayer(cin, cout, kernel, 1)

    def forward(self, x):
        return self.conv(self.up(x))


class StyleTransferNet(nn.Module):
    """Johnson et al.'s fast style-transfer network (the pytorch/examples
    fast_neural_style TransformerNet), widths w, 2w, 4w and `blocks` residual blocks."""

    def __init__(self, w=32, blocks=5):
        super().__init__()
        relu = nn.ReLU()
        self.net = nn.Sequential(
            ConvLayer(3, w, 9, 1), nn.InstanceNorm2d(w, affine=True), relu,
            ConvLayer(w, 2 * w, 3, 2), nn.InstanceNorm2d(2 * w, affine=True), relu,
            ConvLayer(2 * w, 4 * w, 3, 2), nn.InstanceNorm2d(4 * w, affine=True), relu,
            *[ResidualBlock(4 * w) for _ in range(blocks)],
            UpsampleConv(4 * w, 2 * w, 3), nn.InstanceNorm2d(2 * w, affine=True), relu,
            UpsampleConv(2 * w, w, 3), nn.InstanceNorm2d(w, affine=True), relu,
            ConvLayer(w, 3, 9, 1))

    def forward(self, x):
        return self.net(x)


class NarrowResNet(resnet.ResNet):
    """torchvision's ResNet with stage widths of our choosing (the class fixes
    64..512): its BasicBlock, _make_layer and forward, unchanged."""

    def __init__(self, widths=(8, 16, 24, 32), layers=(1, 1, 1, 1), num_classes=10):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = widths[0], 1, 1, 64
        self.conv1 = nn.Conv2d(3, widths[0], kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(resnet.BasicBlock, widths[0], layers[0])
        self.layer2 = self._make_layer(resnet.BasicBlock, widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(resnet.BasicBlock, widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(resnet.BasicBlock, widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3], num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


class NarrowSqueezeNet(nn.Module):
    """SqueezeNet 1.1's layout from torchvision's Fire modules at a quarter width."""

    def __init__(self, num_classes=10):
        super().__init__()
        fire = squeezenet.Fire
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, stride=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            fire(16, 4, 8, 8), fire(16, 4, 8, 8),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            fire(16, 8, 16, 16), fire(32, 8, 16, 16),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            fire(32, 12, 24, 24), fire(48, 12, 24, 24), fire(48, 16, 32, 32), fire(64, 16, 32, 32))
        self.classifier = nn.Sequential(nn.Dropout(p=0.5), nn.Conv2d(64, num_classes, kernel_size=1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def narrow_mobilenet_v2():
    """MobileNetV2(width_mult=0.25) without its last (320-channel) stage and
    with its last 1x1 convolution at 128 channels (the class keeps 1280 below
    width 1: most of the narrow weights)."""
    setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2], [6, 64, 2, 2], [6, 96, 1, 1], [6, 160, 1, 2]]
    model = mobilenetv2.MobileNetV2(width_mult=0.25, num_classes=10, inverted_residual_setting=setting)
    cin = model.features[-1][0].in_channels
    model.features[-1] = torchvision.ops.misc.Conv2dNormActivation(cin, 128, kernel_size=1,
                                                                   norm_layer=nn.BatchNorm2d,
                                                                   activation_layer=nn.ReLU6)
    model.classifier[-1] = nn.Linear(128, 10)
    return model


def narrow_mobilenet_v3_small():
    """MobileNetV3 small at width 0.25 without its last block, classifier 64 wide."""
    setting, _ = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    return mobilenetv3.MobileNetV3(setting[:-1], 64, num_classes=10)


def narrow_efficientnet():
    """EfficientNet-B0's first five MBConv stages at width 0.25, depth 0.34 (SiLU, squeeze-excitation)."""
    setting, last = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.34)
    return efficientnet.EfficientNet(setting[:-2], dropout=0.2, num_classes=10, last_channel=last)


def narrow_regnet():
    """RegNetY's design space (grouped 3x3 bottlenecks with squeeze-excitation) at
    three stages of widths 8/16/32, group width 8."""
    params = regnet.BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
    return regnet.RegNet(params, num_classes=10, stem_width=8)


def tiny_vit():
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                hidden_dim=32, mlp_dim=64, num_classes=10)


# name: (full builder, full input, narrow builder, narrow input)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), 224, lambda: NarrowResNet(), 64),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 224, narrow_mobilenet_v2, 64),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(weights=None), 224,
                           narrow_mobilenet_v3_small, 64),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(weights=None), 224, narrow_efficientnet, 64),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), 224, NarrowSqueezeNet, 64),
    "shufflenet_v2_x0_5": (lambda: torchvision.models.shufflenet_v2_x0_5(weights=None), 224,
                           lambda: shufflenetv2.ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10), 64),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), 224,
                    lambda: densenet.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16,
                                              bn_size=2, num_classes=10), 64),
    "style_transfer": (lambda: StyleTransferNet(32, 5), 256, lambda: StyleTransferNet(8, 2), 64),
    "vit_tiny": (tiny_vit, 32, tiny_vit, 32),
    # Last: a model's seed is its position here, so earlier cases keep theirs.
    "regnet_y_400mf": (lambda: torchvision.models.regnet_y_400mf(weights=None), 224, narrow_regnet, 64),
}


# ---------------------------------------------------------------- weights

def prepare(model, size, seed):
    """Seeded default init; BatchNorm statistics measured on random batches
    (so eval-mode activations stay O(1) at every depth) and its affine
    parameters jittered (so BN is not the identity); then eval mode."""
    g = torch.Generator().manual_seed(seed + 1)
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if bns:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the calibration batches
        model.train()
        with torch.no_grad():
            for _ in range(2):
                model(torch.randn(4, 3, size, size, generator=g))
        with torch.no_grad():
            for m in bns:
                m.weight.copy_(1 + 0.2 * (torch.rand(m.weight.shape, generator=g) - 0.5))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear) and not m.weight.any():
                # torchvision's ViT zero-initializes its head: all-zero logits test nothing.
                nn.init.normal_(m.weight, std=m.in_features ** -0.5, generator=g)
            if isinstance(m, nn.InstanceNorm2d) and m.affine:
                m.weight.copy_(1 + 0.2 * (torch.rand(m.weight.shape, generator=g) - 0.5))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
    model.eval()
    # Outputs of standard deviation ~1: default-init logits can be ~0.02, where
    # an error measured against max(1, |ref|) tests little. The last Linear or
    # Conv is scaled (what follows it -- ReLU, pooling, flatten -- is
    # positively homogeneous, so the output scales with it).
    with torch.no_grad():
        std = float(model(torch.randn(2, 3, size, size, generator=g)).std())
        last = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))][-1]
        last.weight.mul_(1 / std)
        if last.bias is not None:
            last.bias.mul_(1 / std)
    return model


# ---------------------------------------------------------------- Swish as a custom node

class SwishFunction(torch.autograd.Function):
    """x * sigmoid(x), exported by the TorchScript exporter as one
    `layerkit::Swish` node with beta=1 (the custom layer LayerKit's registry has)."""

    @staticmethod
    def forward(ctx, x):
        return x * torch.sigmoid(x)

    @staticmethod
    def symbolic(g, x):
        return g.op("layerkit::Swish", x, beta_f=1.0).setType(x.type())


class Swish(nn.Module):
    def forward(self, x):
        return SwishFunction.apply(x)


def swap_silu(module):
    for name, child in module.named_children():
        if isinstance(child, nn.SiLU):
            setattr(module, name, Swish())
        else:
            swap_silu(child)
    return module


# ---------------------------------------------------------------- export

def export(model, x, exporter, custom=False):
    """The exported ModelProto, as a user would get it with the exporter's defaults."""
    if exporter == "torchscript":
        buffer = io.BytesIO()
        kwargs = {"custom_opsets": {"layerkit": 1}} if custom else {}
        torch.onnx.export(model, (x,), buffer, dynamo=False, input_names=["input"], output_names=["output"],
                          **kwargs)
        return onnx.load_from_string(buffer.getvalue())
    program = torch.onnx.export(model, (x,), dynamo=True, input_names=["input"], output_names=["output"],
                                verbose=False)
    return program.model_proto


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder of the cases (default .build/model-zoo/full, or the zoo fixtures "
                                      "folder with --narrow)")
    parser.add_argument("--narrow", action="store_true", help="the narrow variants, for the committed fixtures")
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--exporters", default="torchscript,dynamo")
    args = parser.parse_args()
    out = args.out or (os.path.join(ROOT, "Tests", "LayerKitTests", "Fixtures", "onnx-cases", "zoo") if args.narrow
                       else os.path.join(ROOT, ".build", "model-zoo", "full"))
    os.makedirs(out, exist_ok=True)
    import onnxruntime
    try:
        import onnxscript
        onnxscript_version = onnxscript.__version__
    except ImportError:
        onnxscript_version = None
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, onnx {onnx.__version__}, "
          f"onnxruntime {onnxruntime.__version__}, onnxscript {onnxscript_version} -> {out}", flush=True)
    names = args.only.split(",") if args.only else list(MODELS)
    summaries = []
    for seed, name in enumerate(MODELS):
        if name not in names:
            continue
        full, full_size, narrow, narrow_size = MODELS[name]
        build, size = (narrow, narrow_size) if args.narrow else (full, full_size)
        torch.manual_seed(seed)
        model = prepare(build(), size, seed)
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(100 + seed))
        feeds = {"input": x.numpy()}
        for exporter in args.exporters.split(","):
            try:
                proto = export(model, x, exporter)
            except Exception as e:  # an exporter failure is a finding, not the end of the run
                print(f"  {name}_{exporter}: export failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            feeds = {proto.graph.input[0].name: x.numpy()}
            notes = {"exporter": exporter, "torch": torch.__version__, "torchvision": torchvision.__version__,
                     "onnxscript": onnxscript_version if exporter == "dynamo" else None,
                     "opset": max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                     "input": [1, 3, size, size]}
            summary = save_case(os.path.join(out, f"{name}_{exporter}"), proto, feeds, notes=notes)
            with torch.no_grad():
                ref = model(x).numpy()
            summary["torch_vs_ort"] = float(np.abs(ref - np.asarray(
                onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f"{name}_{exporter}",
                                                                          "test_data_set_0", "output_0.pb"))))).max())
            summaries.append(summary)
            if name == "efficientnet_b0" and exporter == "torchscript":
                # Once more with SiLU as the custom layerkit::Swish node; the
                # reference and tolerance come from the standard-op export.
                swish = swap_silu(copy.deepcopy(model))
                custom = export(swish, x, "torchscript", custom=True)
                outputs = [onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(
                    out, f"{name}_{exporter}", "test_data_set_0", "output_0.pb")))]
                summaries.append(save_case(os.path.join(out, f"{name}_swish_torchscript"), custom, feeds,
                                           outputs=outputs, twin_of=proto,
                                           notes=dict(notes, swish="SiLU exported as layerkit::Swish(beta=1); "
                                                      "reference and tolerance from efficientnet_b0_torchscript")))
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(out) for n in ns)
    print(f"total {total / 1e6:.2f} MB in {out}")
    # --only rewrites its cases' entries and keeps the others'.
    path = os.path.join(out, "summary.json")
    written = {s["case"] for s in summaries}
    kept = [s for s in json.load(open(path)) if s["case"] not in written] if os.path.exists(path) else []
    with open(path, "w") as f:
        json.dump(kept + summaries, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

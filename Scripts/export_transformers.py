#!/usr/bin/env python3
"""Transformers as users export them: `transformers` models with seeded random
weights (nothing can be downloaded here) through PyTorch's exporters, each
written as a case of the onnx backend-test layout with onnxruntime's outputs
and the fp16-twin GPU tolerance (Scripts/model_zoo_common.py), for
Scripts/model_zoo_report.py (does each run, on both backends) and
Benchmarks/model_zoo.py (how fast, beside onnxruntime).

    python Scripts/export_transformers.py [--out DIR] [--shaped] [--only NAME,...] [--exporter torchscript|dynamo|both]

Small (default, into .build/model-zoo/transformers): the families of the
transformers issue at 2 layers, width 64, 4 heads: BERT, DistilBERT,
RoBERTa, GPT-2 (a fixed and a dynamic sequence length), the T5 encoder, CLIP's
text model (int64 ids, an int64 mask with padding where the model takes one),
ViT, the Whisper encoder and wav2vec2 (float inputs); a small Swin from
torchvision's class; LSTM, bidirectional LSTM and GRU text classifiers.

--shaped (into .build/model-zoo/transformers-shaped): the benchmark shapes,
random weights at full size: BERT-base and GPT-2 small at sequence 128, ViT-B/16
at 224x224, the Whisper-base encoder (80 x 3000 features), and torchvision's
ConvNeXt-tiny (224x224) and DeepLabV3-MobileNetV3-large (520x520, the size its
weights were trained at). Tens to hundreds of MB:
not committed.

Case names: <model>_<exporter>, exporter `torchscript` (torch.onnx.export
dynamo=False, opset 17) or `dynamo` (dynamo=True, its default opset). Needs
torch (CPU), torchvision (--no-deps), transformers, onnx, onnxruntime,
onnxscript, numpy and Pillow.
"""

import argparse
import os
import sys
import tempfile
import warnings

import torch.library

torch.library.register_fake = lambda *a, **k: (lambda f: f)  # torchvision's compiled ops don't load against CPU torch

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import transformers as tf  # noqa: E402
from torch import nn  # noqa: E402
import torchvision  # noqa: E402
from torchvision.models import segmentation, swin_transformer  # noqa: E402
from transformers.models.whisper.modeling_whisper import WhisperEncoder  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_zoo_common import save_case  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TextClassifier(nn.Module):
    """Embedding, a recurrent layer (bidirectional with `bidirectional`),
    the last step's state through a Linear: a classifier as tutorials write it."""

    def __init__(self, cell, bidirectional=False):
        super().__init__()
        self.embedding = nn.Embedding(100, 32)
        self.rnn = cell(32, 48, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(48 * (2 if bidirectional else 1), 5)

    def forward(self, input_ids):
        out = self.rnn(self.embedding(input_ids))[0]
        return self.head(out[:, -1])


class FirstOutput(nn.Module):
    """The model's first output (its last hidden state) from positional inputs."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs):
        if not isinstance(self.model, tf.PreTrainedModel):
            out = self.model(*inputs)
            return out["out"] if isinstance(out, dict) else out  # torchvision's segmentation models
        return self.model(**dict(zip(self.names, inputs)), return_dict=False)[0]


def text_inputs(vocab, length, mask=True, seed=0):
    """int64 ids in [3, vocab) and, with `mask`, a mask whose last quarter is padding."""
    g = np.random.default_rng(seed)
    ids = g.integers(3, vocab, (1, length)).astype(np.int64)
    if not mask:
        return {"input_ids": ids}
    attention = np.ones((1, length), np.int64)
    attention[:, length - length // 4:] = 0
    return {"input_ids": ids, "attention_mask": attention}


def image_input(size, seed=1):
    """One seeded 3 x size x size image as `pixel_values`."""
    return {"pixel_values": np.random.default_rng(seed).standard_normal((1, 3, size, size)).astype(np.float32)}


def logits_scaled(model):
    """`model` with its head scaled so the logits' spread is about 1: the
    default init's 0.02 would leave them within 0.05, which a 1e-3 bound
    relative to max(1, |y|) barely tests."""
    with torch.no_grad():
        model.head.weight *= 50
    return model


def small():
    """name -> (model, inputs, dynamic axes): the families at 2 layers, width 64."""
    common = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    return {
        "bert": (tf.BertModel(tf.BertConfig(vocab_size=100, max_position_embeddings=64, **common)),
                 text_inputs(100, 16), None),
        "distilbert": (tf.DistilBertModel(tf.DistilBertConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4,
                                                              hidden_dim=128, max_position_embeddings=64)),
                       text_inputs(100, 16), None),
        "roberta": (tf.RobertaModel(tf.RobertaConfig(vocab_size=100, max_position_embeddings=66, pad_token_id=1,
                                                     **common)), text_inputs(100, 16), None),
        "gpt2": (tf.GPT2Model(tf.GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                                            use_cache=False)), text_inputs(100, 16), None),
        "gpt2_dynamic": (tf.GPT2Model(tf.GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                                                    use_cache=False)),
                         text_inputs(100, 16), {"input_ids": {1: "sequence"}, "attention_mask": {1: "sequence"}}),
        "t5_encoder": (tf.T5EncoderModel(tf.T5Config(vocab_size=100, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                                     num_heads=4)), text_inputs(100, 16), None),
        "clip_text": (tf.CLIPTextModel(tf.CLIPTextConfig(vocab_size=100, max_position_embeddings=32, **common)),
                      text_inputs(100, 16, mask=False), None),
        "vit": (tf.ViTModel(tf.ViTConfig(image_size=32, patch_size=8, **common)),
                {"pixel_values": np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)}, None),
        "whisper_encoder": (WhisperEncoder(tf.WhisperConfig(d_model=64, encoder_layers=2, encoder_attention_heads=4,
                                                            encoder_ffn_dim=128, max_source_positions=50)),
                            {"input_features": np.random.default_rng(2).standard_normal((1, 80, 100)).astype(np.float32)},
                            None),
        "wav2vec2": (tf.Wav2Vec2Model(tf.Wav2Vec2Config(conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                                                        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                                                        **common)),
                     {"input_values": np.random.default_rng(3).standard_normal((1, 1600)).astype(np.float32)}, None),
        "swin": (logits_scaled(swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2],
                                                                num_heads=[2, 4], window_size=[4, 4], num_classes=10)),
                 {"pixel_values": np.random.default_rng(4).standard_normal((1, 3, 64, 64)).astype(np.float32)}, None),
        "lstm_classifier": (TextClassifier(nn.LSTM), text_inputs(100, 12, mask=False), None),
        "bilstm_classifier": (TextClassifier(nn.LSTM, bidirectional=True), text_inputs(100, 12, mask=False), None),
        "gru_classifier": (TextClassifier(nn.GRU), text_inputs(100, 12, mask=False), None),
    }


def shaped():
    """name -> (model, inputs, dynamic axes): the benchmark shapes of the transformers issue."""
    return {
        "bert_base": (tf.BertModel(tf.BertConfig()), text_inputs(30522, 128), None),
        "gpt2_small": (tf.GPT2Model(tf.GPT2Config(use_cache=False)), text_inputs(50257, 128), None),
        "vit_b16": (tf.ViTModel(tf.ViTConfig()), image_input(224), None),
        "whisper_base_encoder": (WhisperEncoder(tf.WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                                                                 encoder_ffn_dim=2048)),
                                 {"input_features": np.random.default_rng(2).standard_normal((1, 80, 3000)).astype(np.float32)},
                                 None),
        "convnext_tiny": (torchvision.models.convnext_tiny(weights=None), image_input(224), None),
        "deeplabv3_mobilenet_v3": (segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None),
                                   image_input(520), None),
    }


def export(model, inputs, dynamic, exporter):
    """The ONNX model of `model` on `inputs` (name -> array) by `exporter`."""
    names = list(inputs)
    wrapper = FirstOutput(model.eval(), names)
    args = tuple(torch.from_numpy(inputs[n]) for n in names)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "model.onnx")
                torch.onnx.export(wrapper, args, path, input_names=names, output_names=["hidden"], opset_version=17,
                                  dynamic_axes=dynamic, dynamo=False)
                return onnx.load(path)
        shapes = None
        if dynamic:
            # One named dimension per axis name, shared by the inputs that have it.
            dims = {label: torch.export.Dim(label, min=2, max=63) for axes in dynamic.values() for label in axes.values()}
            # The wrapper takes *inputs: one entry per positional input.
            shapes = (tuple({axis: dims[label] for axis, label in dynamic.get(n, {}).items()} for n in names),)
        program = torch.onnx.export(wrapper, args, input_names=names, output_names=["hidden"], dynamo=True,
                                    dynamic_shapes=shapes, external_data=False)
        return program.model_proto


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out")
    parser.add_argument("--shaped", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--exporter", choices=["torchscript", "dynamo", "both"], default="both")
    args = parser.parse_args()
    out = args.out or os.path.join(ROOT, ".build", "model-zoo", "transformers-shaped" if args.shaped else "transformers")
    torch.manual_seed(0)
    models = shaped() if args.shaped else small()
    only = set(filter(None, args.only.split(",")))
    exporters = ["torchscript", "dynamo"] if args.exporter == "both" else [args.exporter]
    for name, (model, inputs, dynamic) in models.items():
        if only and name not in only:
            continue
        for exporter in exporters:
            case = f"{name}_{exporter}"
            try:
                proto = export(model, inputs, dynamic, exporter)
            except Exception as error:  # an exporter's failure is the exporter's, not a case
                print(f"{case}: not exported: {str(error).splitlines()[0][:200]}")
                continue
            notes = {"exporter": exporter, "torch": torch.__version__, "transformers": tf.__version__,
                     "opset": max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                     "inputs": {n: list(v.shape) for n, v in inputs.items()}}
            save_case(os.path.join(out, case), proto, inputs, notes=notes)


if __name__ == "__main__":
    main()

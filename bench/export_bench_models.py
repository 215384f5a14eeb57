#!/usr/bin/python3
#===- bench/export_bench_models.py - Models for bench/cpu_inference.sh ---===#
# SPDX-License-Identifier: Apache-2.0
#
# Exports the four models of the CPU inference benchmark to ONNX (opset 17)
# with static shapes and deterministic weights, reusing the model classes of
# scripts/export_models.py:
#
#   mlp     MLP 784-512-512-10, x[64,784]
#   gpt     2-layer GPT-style causal LM, d=256, 4 heads, vocab 1024,
#           idx[4,64] int64
#   resnet  small residual CNN, image[8,3,32,32]
#   dlrm    DLRM-style recommender with 8 embedding tables (dim 32),
#           dense[128,13], sparse[128,8] int64
#
# and, on request (not in the default set: each takes seconds per run),
# transformers at real sizes:
#
#   vit_b16, vit_b16_b8    torchvision's ViT-B/16 (86M parameters, 17.5
#                          GFLOP per image), image[1|8,3,224,224]
#   bert_base, bert_base_b8
#                          a BERT-base-sized encoder written as Hugging
#                          Face's BertModel exports (12 layers, d=768, 12
#                          heads, FFN 3072, exact GELU, additive attention
#                          mask, vocabulary 30522), ids[1|8,128] int64 and
#                          mask[1|8,128] f32
#   swin_t, swin_t_b8      torchvision's Swin-T (28M parameters, 4.5 GFLOP
#                          per image: shifted-window attention, its masks
#                          built with ScatterND), image[1|8,3,224,224]
#
# and the convolutional networks of bench/zoo.sh (issue 33), each at batch 1
# and, with the suffix _b8, at batch 8:
#
#   resnet50, mobilenet_v2, efficientnet_b0, densenet121, convnext_tiny,
#   shufflenet_v2, regnet_y_400mf, mobilenet_v3_large, googlenet,
#   squeezenet1_1, alexnet
#                          torchvision's ImageNet networks (residual,
#                          depthwise-separable with squeeze-excitation,
#                          dense concatenation, 7x7 depthwise, channel
#                          shuffle, grouped, HardSwish, inception branches
#                          with poolings, fire modules, classifier layers of
#                          234 MB), image[B,3,224,224]
#   tcn1d                  a temporal network written here: causal 1-D
#                          convolutions of kernel 3 dilated 1 to 16 with
#                          residuals, x[B,64,2048]
#   unet                   an encoder-decoder written here: strided 3x3
#                          convolutions down, ConvTranspose 2x2 up, skip
#                          concatenations, image[B,3,128,128]
#   video3d                a 3-D convolutional network written here (3x3x3
#                          convolutions, 3-D max pooling), clip[B,3,8,64,64]
#
# With --dynamic-batch every input's and output's first dimension is left
# open (dynamic_axes, the name "batch"), as deployment exports often write
# them; the inputs are still made at the model's batch.
#
# For each model it writes DIR/models/<model>.onnx, its inputs as
# DIR/inputs/<model>/<input>.npy (with scripts/make_model_inputs.py; ids are
# in range for every embedding table) and PyTorch's outputs on them as
# DIR/torch/<model>/<output>.npy. Prints one line per model:
#   <model> <path> batch=<B> inputs=<name:shape,...> ops=<Op,...>
#
#   /usr/bin/python3 bench/export_bench_models.py --out DIR [--model M ...]
#       [--dynamic-batch]

import argparse
import os
import subprocess
import sys

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
# Exits with a message if torch or onnx is missing.
import export_models as em  # noqa: E402
import make_model_inputs  # noqa: E402

import onnx  # noqa: E402
import torch  # noqa: E402

OPSET = 17
MLP8_WIDTH = 1024
MODELS = ("mlp", "gpt", "resnet", "dlrm")
TRANSFORMERS = ("vit_b16", "vit_b16_b8", "bert_base", "bert_base_b8",
                "swin_t", "swin_t_b8")
TORCHVISION_CNNS = ("resnet50", "mobilenet_v2", "efficientnet_b0",
                    "densenet121", "convnext_tiny", "shufflenet_v2",
                    "regnet_y_400mf", "mobilenet_v3_large", "googlenet",
                    "squeezenet1_1", "alexnet")
OWN_CNNS = ("tcn1d", "unet", "video3d")
CNNS = tuple(n + s for n in TORCHVISION_CNNS + OWN_CNNS for s in ("", "_b8"))
GPT_VOCAB = 1024
GPT_SEQ = 64
DLRM_TABLES = (100000, 50000, 20000, 10000, 5000, 2000, 1000, 500)
DLRM_DIM = 32
BERT_VOCAB = 30522
BERT_SEQ = 128


class BertSelfAttention(torch.nn.Module):
    """Hugging Face's BertSelfAttention + BertSelfOutput: separate q, k, v
    projections, heads split by view + permute, an additive mask."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)
        self.out = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d, eps=1e-12)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.dh).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), \
            self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (self.dh ** 0.5)
        probs = torch.softmax(scores + mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(x.shape[0], x.shape[1], -1)
        return self.norm(self.out(ctx) + x)


class BertLayer(torch.nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.attn = BertSelfAttention(d, heads)
        self.up = torch.nn.Linear(d, ffn)
        self.down = torch.nn.Linear(ffn, d)
        self.norm = torch.nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        x = self.attn(x, mask)
        h = torch.nn.functional.gelu(self.up(x))
        return self.norm(self.down(h) + x)


class BertEncoder(torch.nn.Module):
    """BERT-base: word, position and token-type embeddings, LayerNorm, 12
    layers, the pooler (tanh of a dense layer on the first token)."""

    def __init__(self, vocab=BERT_VOCAB, seq=512, d=768, heads=12,
                 ffn=3072, layers=12):
        super().__init__()
        self.words = torch.nn.Embedding(vocab, d)
        self.positions = torch.nn.Embedding(seq, d)
        self.types = torch.nn.Embedding(2, d)
        self.norm = torch.nn.LayerNorm(d, eps=1e-12)
        self.layers = torch.nn.ModuleList(
            BertLayer(d, heads, ffn) for _ in range(layers))
        self.pool = torch.nn.Linear(d, d)

    def forward(self, ids, mask):
        t = ids.shape[1]
        pos = torch.arange(t, dtype=torch.long).unsqueeze(0)
        x = self.words(ids) + self.positions(pos) + \
            self.types(torch.zeros_like(ids))
        x = self.norm(x)
        # [B, T] of 1 (attend) / 0 (padding) to [B, 1, 1, T] of 0 / -10000.
        bias = (1.0 - mask[:, None, None, :]) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return x, torch.tanh(self.pool(x[:, 0]))


class TemporalNet(torch.nn.Module):
    """Causal dilated 1-D convolutions with residuals (a TCN/WaveNet-style
    stack) and a per-step linear head."""

    def __init__(self, channels=64, dilations=(1, 2, 4, 8, 16)):
        super().__init__()
        nn = torch.nn
        self.dilations = dilations
        self.convs = nn.ModuleList(
            nn.Conv1d(channels, channels, 3, dilation=d) for d in dilations)
        self.norms = nn.ModuleList(nn.BatchNorm1d(channels) for _ in dilations)
        self.head = nn.Conv1d(channels, 16, 1)

    def forward(self, x):
        for d, conv, norm in zip(self.dilations, self.convs, self.norms):
            # Left padding keeps the convolution causal.
            y = conv(torch.nn.functional.pad(x, (2 * d, 0)))
            x = x + torch.relu(norm(y))
        return self.head(x)


class EncoderDecoder(torch.nn.Module):
    """A small U-Net: strided convolutions down, ConvTranspose up, skip
    concatenations."""

    def __init__(self):
        super().__init__()
        nn = torch.nn

        def block(cin, cout, stride=1):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1),
                                 nn.BatchNorm2d(cout), nn.ReLU())
        self.enc1 = block(3, 32)
        self.enc2 = block(32, 64, 2)
        self.enc3 = block(64, 128, 2)
        self.up2 = nn.ConvTranspose2d(128, 64, 2, stride=2)
        self.dec2 = block(128, 64)
        self.up1 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.dec1 = block(64, 32)
        self.out = nn.Conv2d(32, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        e3 = self.enc3(e2)
        d2 = self.dec2(torch.cat([self.up2(e3), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.out(d1)


class VideoNet(torch.nn.Module):
    """3x3x3 convolutions and 3-D max pooling over short clips."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(
            nn.Conv3d(3, 32, 3, padding=1), nn.BatchNorm3d(32), nn.ReLU(),
            nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(32, 64, 3, padding=1), nn.BatchNorm3d(64), nn.ReLU(),
            nn.MaxPool3d(2),
            nn.Conv3d(64, 128, 3, padding=1), nn.BatchNorm3d(128), nn.ReLU(),
            nn.AdaptiveAvgPool3d(1))
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


def make_bench_model(name):
    """Returns (module, input shapes, input names, output names, batch,
    the bound of integer inputs)."""
    torch.manual_seed(0)
    if name == "mlp":
        return (em.MLP((784, 512, 512, 10)), [(64, 784)], ["x"], ["logits"],
                64, None)
    if name == "mlp8":
        # bench/pp_schedule.py's balanced pipeline: 8 Linear layers whose
        # halves cost alike at pp=2 (the wider first layer of stage 0 makes
        # up for stage 1's loss and the input gradient stage 0 does not
        # compute), 1024 classes.
        return (em.MLP((1536,) + (MLP8_WIDTH,) * 8), [(256, 1536)], ["x"],
                ["logits"], 256, None)
    if name == "gpt":
        model = em.GPT(vocab=GPT_VOCAB, block_size=GPT_SEQ, n_layer=2,
                       d_model=256, n_head=4)
        em.randomize_norms(model)
        return model, [(4, GPT_SEQ)], ["idx"], ["logits"], 4, GPT_VOCAB
    if name == "resnet":
        model = em.ResNet()
        em.randomize_norms(model)
        return model, [(8, 3, 32, 32)], ["image"], ["logits"], 8, None
    if name == "dlrm":
        model = em.DLRM(num_dense=13, table_sizes=DLRM_TABLES, dim=DLRM_DIM)
        return (model, [(128, 13), (128, len(DLRM_TABLES))],
                ["dense", "sparse"], ["prob"], 128, min(DLRM_TABLES))
    if name in ("vit_b16", "vit_b16_b8"):
        import torchvision
        batch = 8 if name.endswith("_b8") else 1
        model = torchvision.models.vit_b_16()
        em.randomize_norms(model)
        # torchvision starts the classifier at zero: outputs of zeros would
        # compare equal whatever the network computes.
        with torch.no_grad():
            model.heads.head.weight.normal_(0, 0.02)
            model.heads.head.bias.uniform_(-0.1, 0.1)
        return (model, [(batch, 3, 224, 224)], ["image"], ["logits"], batch,
                None)
    if name in ("swin_t", "swin_t_b8"):
        import torchvision
        batch = 8 if name.endswith("_b8") else 1
        model = torchvision.models.swin_t()
        em.randomize_norms(model)
        return (model, [(batch, 3, 224, 224)], ["image"], ["logits"], batch,
                None)
    if name in ("bert_base", "bert_base_b8"):
        batch = 8 if name.endswith("_b8") else 1
        model = BertEncoder()
        em.randomize_norms(model)
        return (model, [(batch, BERT_SEQ), (batch, BERT_SEQ)], ["ids", "mask"],
                ["hidden", "pooled"], batch, BERT_VOCAB)
    if name in CNNS:
        batch = 8 if name.endswith("_b8") else 1
        base = name[:-3] if name.endswith("_b8") else name
        if base == "tcn1d":
            model, shape, inp = TemporalNet(), (batch, 64, 2048), "x"
        elif base == "unet":
            model, shape, inp = EncoderDecoder(), (batch, 3, 128, 128), "image"
        elif base == "video3d":
            model, shape, inp = VideoNet(), (batch, 3, 8, 64, 64), "clip"
        else:
            import torchvision
            ctor = {"shufflenet_v2": "shufflenet_v2_x1_0"}.get(base, base)
            # GoogLeNet without its training-only auxiliary classifiers.
            kwargs = ({"aux_logits": False, "init_weights": True}
                      if base == "googlenet" else {})
            model = getattr(torchvision.models, ctor)(**kwargs)
            shape, inp = (batch, 3, 224, 224), "image"
        em.randomize_norms(model)
        return model, [shape], [inp], ["out"], batch, None
    raise ValueError("unknown model %s" % name)


def example_args(shapes, input_names):
    """Zero tensors of the input shapes: ids for `idx` and `sparse`."""
    args = []
    for shape, name in zip(shapes, input_names):
        if name in ("idx", "sparse", "ids"):
            args.append(torch.zeros(shape, dtype=torch.long))
        else:
            args.append(torch.zeros(shape))
    return tuple(args)


def export_static(model, args, input_names, output_names, path,
                  dynamic_batch=False):
    model.eval()
    # With gradients off, nn.MultiheadAttention (ViT's) takes its fused
    # fast path, which has no ONNX export; with them on it exports as the
    # products and softmax it computes.
    grad = any(isinstance(m, torch.nn.MultiheadAttention)
               for m in model.modules())
    with torch.set_grad_enabled(grad):
        axes = ({n: {0: "batch"} for n in input_names + output_names}
                if dynamic_batch else None)
        torch.onnx.export(model, args, path, opset_version=OPSET,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=axes, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL)


def main():
    p = argparse.ArgumentParser(
        description="Export the CPU benchmark models, their inputs and "
        "PyTorch's outputs.")
    p.add_argument("--out", required=True, help="work directory")
    p.add_argument("--model", nargs="+", choices=MODELS + TRANSFORMERS + CNNS,
                   default=list(MODELS))
    p.add_argument("--dynamic-batch", action="store_true",
                   help="leave the first dimension of every input and "
                   "output open")
    a = p.parse_args()

    for name in a.model:
        model, shapes, ins, outs, batch, int_high = make_bench_model(name)
        model_dir = os.path.join(a.out, "models")
        in_dir = os.path.join(a.out, "inputs", name)
        ref_dir = os.path.join(a.out, "torch", name)
        for d in (model_dir, in_dir, ref_dir):
            os.makedirs(d, exist_ok=True)
        path = os.path.join(model_dir, name + ".onnx")
        export_static(model, example_args(shapes, ins), ins, outs,
                      path, a.dynamic_batch)
        desc = em.check(path)  # onnx.checker and the importer's op list

        cmd = [sys.executable, os.path.join(REPO_ROOT, "scripts",
                                            "make_model_inputs.py"),
               path, "--batch", str(batch), "--out", in_dir]
        if int_high:
            cmd += ["--int-high", str(int_high)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        if "mask" in ins:
            # An attention mask of ones with padding at the end of every
            # other row, not random floats.
            mask = np.ones(shapes[ins.index("mask")], dtype=np.float32)
            mask[1::2, -mask.shape[1] // 4:] = 0
            np.save(os.path.join(in_dir, make_model_inputs.file_name("mask")
                                 + ".npy"), mask)

        graph = onnx.load(path, load_external_data=False).graph
        inits = {i.name for i in graph.initializer}
        names = [i.name for i in graph.input if i.name not in inits]
        args = [torch.from_numpy(np.load(os.path.join(
            in_dir, make_model_inputs.file_name(n) + ".npy"))) for n in names]
        with torch.no_grad():
            results = model(*args)
        if isinstance(results, torch.Tensor):
            results = (results,)
        for out, value in zip(outs, results):
            np.save(os.path.join(ref_dir, out.replace("/", "_") + ".npy"),
                    value.numpy())
        ops = desc.split(" ops=", 1)[1]
        print("%s %s batch=%d inputs=%s ops=%s" % (
            name, path, batch, ",".join("%s:%s" % (n, list(s)) for n, s in
                                        zip(ins, shapes)), ops), flush=True)


if __name__ == "__main__":
    main()

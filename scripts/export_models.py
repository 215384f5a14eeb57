#!/usr/bin/python3
#===- scripts/export_models.py - Export the PyTorch test models to ONNX ---===#
# SPDX-License-Identifier: Apache-2.0
#
# Exports small but realistic models (an MLP, a GPT-style causal LM, a
# DLRM-style recommender and a residual CNN) to ONNX with torch.onnx.export, at
# opsets 13, 14 and 17, with a dynamic batch dimension (dim 0 of every input
# and output) and deterministic weights. Each exported model is checked with
# onnx.checker and its op types are checked against the set the dist-opt ONNX
# importer supports; the script fails naming any op outside that set. Optional
# outputs: a copy of each model with its weights in an external data file, and
# a large MLP for an import-speed benchmark.
#
# Run with Debian's interpreter, which has torch and onnx:
#   /usr/bin/python3 scripts/export_models.py --out /tmp/models
#
# Output: DIR/<model>_opset<N>.onnx, one stdout line per file written:
#   <path> inputs=<name:shape,...> outputs=<name:shape,...> ops=<Op,Op,...>
# Timings go to stderr.

import argparse
import math
import os
import sys
import time

try:
    import onnx
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"export_models.py: {e}; run it with /usr/bin/python3 (Debian's "
             "python3-torch and python3-onnx)")

OPSETS = (13, 14, 17)
MODELS = ("mlp", "gpt", "dlrm", "resnet")

# Op types the dist-opt ONNX importer supports (default ONNX domain only).
SUPPORTED_OPS = frozenset("""
Abs Neg Exp Log Sqrt Reciprocal Floor Ceil Round Sign Sin Cos Tanh Sigmoid
Relu LeakyRelu Elu Selu Celu Softplus Softsign HardSigmoid HardSwish Erf Gelu
Not Identity Clip Cast CastLike PRelu Add Sub Mul Div Pow Mod Max Min Sum Mean
Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor Where MatMul Gemm
Conv ConvTranspose MaxPool AveragePool GlobalAveragePool GlobalMaxPool
BatchNormalization LayerNormalization InstanceNormalization Dropout Softmax
LogSoftmax ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceSumSquare
ReduceL2 ReduceLogSumExp ArgMax ArgMin Reshape Flatten Transpose Squeeze
Unsqueeze Concat Split Slice Gather GatherElements ScatterElements ScatterND
Expand Tile Pad Shape Size ConstantOfShape Constant Range TopK Trilu CumSum OneHot
SoftmaxCrossEntropyLoss NegativeLogLikelihoodLoss
""".split())

#===----------------------------------------------------------------------===#
# Models
#===----------------------------------------------------------------------===#


class MLP(nn.Module):
    """x[B,784] -> 256 -> 128 -> 10 logits by default; `sizes` lists the
    widths from the input to the logits, with a ReLU between layers."""

    def __init__(self, sizes=(784, 256, 128, 10)):
        super().__init__()
        mods = []
        for i in range(len(sizes) - 1):
            if i:
                mods.append(nn.ReLU())
            mods.append(nn.Linear(sizes[i], sizes[i + 1]))
        self.net = nn.Sequential(*mods)

    def forward(self, x):
        return self.net(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, block_size):
        super().__init__()
        assert d_model % n_head == 0
        self.n_head = n_head
        self.scale = 1.0 / math.sqrt(d_model // n_head)
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(block_size, block_size))
        self.register_buffer("mask", mask.view(1, 1, block_size, block_size))

    def forward(self, x):
        # Dynamic sizes so that torch writes Shape/Gather/Unsqueeze/Concat
        # chains feeding the Reshapes.
        B, T, C = x.size(0), x.size(1), x.size(2)
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, d_model, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, block_size)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(),
            nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    """idx[B,T] int64 -> logits[B,T,vocab]; T is fixed at export."""

    def __init__(self, vocab=128, block_size=16, n_layer=2, d_model=64,
                 n_head=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(block_size, d_model)
        self.blocks = nn.ModuleList(
            [Block(d_model, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class DLRM(nn.Module):
    """dense[B,13] float, sparse[B,3] int64 ids -> prob[B,1]."""

    def __init__(self, num_dense=13, table_sizes=(1000, 500, 200), dim=16):
        super().__init__()
        self.bottom = nn.Sequential(
            nn.Linear(num_dense, 64), nn.ReLU(),
            nn.Linear(64, dim), nn.ReLU())
        self.tables = nn.ModuleList(
            [nn.Embedding(n, dim) for n in table_sizes])
        nf = len(table_sizes) + 1
        # Strict upper triangle of the nf x nf interaction matrix, as indices
        # into its flattened form: a constant index for a single Gather.
        li, lj = torch.triu_indices(nf, nf, offset=1)
        self.register_buffer("tri_idx", li * nf + lj)
        num_int = nf * (nf - 1) // 2
        self.top = nn.Sequential(
            nn.Linear(dim + num_int, 64), nn.ReLU(),
            nn.Linear(64, 1), nn.Sigmoid())

    def forward(self, dense, sparse):
        d = self.bottom(dense)                                     # [B,dim]
        embs = [t(sparse[:, i]) for i, t in enumerate(self.tables)]
        feats = torch.stack([d] + embs, dim=1)                     # [B,nf,dim]
        z = torch.bmm(feats, feats.transpose(1, 2))                # [B,nf,nf]
        z = z.flatten(1).index_select(1, self.tri_idx)             # [B,nint]
        return self.top(torch.cat([d, z], dim=1))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False),
                nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.down is None else self.down(x)
        return F.relu(out + identity)


class ResNet(nn.Module):
    """image[B,3,32,32] -> logits[B,10]."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
            nn.ReLU(), nn.MaxPool2d(2))                            # 16x16
        self.layer1 = BasicBlock(16, 16, 1)
        self.layer2 = BasicBlock(16, 32, 2)                        # 8x8
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, image):
        x = self.layer2(self.layer1(self.stem(image)))
        return self.fc(torch.flatten(self.pool(x), 1))


class BigMLP(nn.Module):
    """x[B,width] through `layers` square Linear+ReLU layers."""

    def __init__(self, width, layers):
        super().__init__()
        mods = []
        for i in range(layers):
            mods.append(nn.Linear(width, width))
            if i + 1 < layers:
                mods.append(nn.ReLU())
        self.net = nn.Sequential(*mods)

    def forward(self, x):
        return self.net(x)


def randomize_norms(model):
    """Non-trivial LayerNorm and BatchNorm parameters and statistics, so
    that no norm is an identity and no two share a value."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.LayerNorm, nn.modules.batchnorm._BatchNorm)):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)


def make_model(name):
    """Returns (module, example inputs, input names, output names)."""
    torch.manual_seed(0)
    if name == "mlp":
        return MLP(), (torch.randn(2, 784),), ["x"], ["logits"]
    if name == "gpt":
        model = GPT()
        # Non-trivial LayerNorm parameters: with the default ones and zeros
        # every LayerNorm would share one deduplicated initializer.
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.1, 0.1)
        return (model, (torch.randint(0, 128, (2, 16), dtype=torch.long),),
                ["idx"], ["logits"])
    if name == "dlrm":
        dense = torch.randn(2, 13)
        sparse = torch.stack([torch.randint(0, n, (2,)) for n in
                              (1000, 500, 200)], dim=1)
        return DLRM(), (dense, sparse), ["dense", "sparse"], ["prob"]
    if name == "resnet":
        model = ResNet()
        # Non-trivial BN statistics so that BN is not an identity.
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.1, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.1, 0.1)
        return model, (torch.randn(2, 3, 32, 32),), ["image"], ["logits"]
    raise ValueError(f"unknown model {name}")


def big_mlp_shape(mb):
    """Chooses (width, layers) so that the weights total about `mb` MB."""
    floats = mb * (1 << 20) / 4
    width = 4096
    if floats < width * width:
        width = max(256, int(math.sqrt(floats)) // 256 * 256)
    layers = max(1, round(floats / (width * (width + 1))))
    return width, layers

#===----------------------------------------------------------------------===#
# Export and checks
#===----------------------------------------------------------------------===#


def export(model, args, input_names, output_names, path, opset, pin=True):
    model.eval()
    dynamic_axes = {n: {0: "batch"} for n in input_names + output_names}
    with torch.no_grad():
        results = model(*args)  # Make sure it runs before exporting.
        torch.onnx.export(
            model, args, path, opset_version=opset,
            input_names=input_names, output_names=output_names,
            dynamic_axes=dynamic_axes, do_constant_folding=True,
            training=torch.onnx.TrainingMode.EVAL)
    if not pin:
        return
    if isinstance(results, torch.Tensor):
        results = (results,)
    pin_output_shapes(path, [tuple(r.shape) for r in results])


def pin_output_shapes(path, shapes):
    """Makes every output dim but the batch one static.

    torch's shape inference loses sizes that flow through data (the GPT's
    Range over idx.size(1)) and names them with made-up symbols such as
    `MatMullogits_dim_1`. Only the batch is dynamic, so write the sizes the
    model produced instead. Small models only: this rewrites the file."""
    model = onnx.load(path)
    changed = False
    for out, shape in zip(model.graph.output, shapes):
        dims = out.type.tensor_type.shape.dim
        for i, d in enumerate(dims):
            if i > 0 and not d.HasField("dim_value"):
                d.dim_value = shape[i]
                changed = True
    if changed:
        onnx.save_model(model, path)


def all_nodes(graph):
    """Yields the nodes of `graph` and of every subgraph, recursively."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from all_nodes(g)


def op_types(model):
    ops = set()
    for node in all_nodes(model.graph):
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        ops.add(f"{domain}::{node.op_type}" if domain else node.op_type)
    return sorted(ops)


def value_info_str(vis):
    out = []
    for vi in vis:
        dims = [d.dim_param if d.HasField("dim_param") else str(d.dim_value)
                for d in vi.type.tensor_type.shape.dim]
        out.append(f"{vi.name}:[{','.join(dims)}]")
    return ",".join(out)


def check(path, big=False):
    """Checks the model at `path`; returns its one-line description."""
    # Check by path so that models over 2 GB and external data work.
    onnx.checker.check_model(path)
    model = onnx.load(path, load_external_data=False)
    ops = op_types(model)
    bad = [op for op in ops if op not in SUPPORTED_OPS]
    if bad:
        sys.exit(f"export_models.py: {path}: op types not supported by the "
                 f"importer: {' '.join(bad)}")
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    return (f"{path} inputs={value_info_str(inputs)} "
            f"outputs={value_info_str(model.graph.output)} ops={','.join(ops)}")


def save_external(path, ext_path, data_name):
    data_path = os.path.join(os.path.dirname(ext_path), data_name)
    # onnx appends to an existing data file, so start from a clean one.
    if os.path.exists(data_path):
        os.remove(data_path)
    model = onnx.load(path)
    onnx.save_model(model, ext_path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data_name,
                    size_threshold=1024)


def main():
    p = argparse.ArgumentParser(
        description="Export the dist-opt test models to ONNX and check them.")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--opset", type=int, nargs="+", choices=OPSETS,
                   default=list(OPSETS))
    p.add_argument("--model", nargs="+", choices=MODELS, default=list(MODELS))
    p.add_argument("--external-data", action="store_true",
                   help="also write <model>_opset<N>_ext.onnx with its "
                   "weights in <model>_opset<N>.data")
    p.add_argument("--big-mlp-mb", type=float, metavar="N",
                   help="also write big_mlp.onnx with about N MB of weights")
    a = p.parse_args()
    if a.big_mlp_mb is not None and not 0 < a.big_mlp_mb <= 1900:
        # torch.onnx.export switches to one external file per tensor past
        # protobuf's 2 GB limit; keep big_mlp.onnx a single file.
        p.error("--big-mlp-mb must be in (0, 1900]")
    os.makedirs(a.out, exist_ok=True)

    total = time.perf_counter()
    for name in a.model:
        for opset in a.opset:
            model, args, ins, outs = make_model(name)
            base = f"{name}_opset{opset}"
            path = os.path.join(a.out, base + ".onnx")
            t0 = time.perf_counter()
            export(model, args, ins, outs, path, opset)
            dt = time.perf_counter() - t0
            print(check(path), flush=True)
            print(f"  {path}: exported in {dt:.2f}s, "
                  f"{os.path.getsize(path) / 1e6:.2f} MB", file=sys.stderr)
            if a.external_data:
                ext = os.path.join(a.out, base + "_ext.onnx")
                save_external(path, ext, base + ".data")
                print(check(ext), flush=True)

    if a.big_mlp_mb:
        width, layers = big_mlp_shape(a.big_mlp_mb)
        torch.manual_seed(0)
        model = BigMLP(width, layers)
        path = os.path.join(a.out, "big_mlp.onnx")
        t0 = time.perf_counter()
        # The opset is the last one asked for; the big MLP is opset-neutral.
        export(model, (torch.randn(1, width),), ["x"], ["y"], path,
               a.opset[-1], pin=False)
        dt = time.perf_counter() - t0
        print(check(path, big=True), flush=True)
        print(f"  {path}: width={width} layers={layers}, exported in "
              f"{dt:.2f}s, {os.path.getsize(path) / 1e6:.1f} MB",
              file=sys.stderr)
    print(f"  total {time.perf_counter() - total:.2f}s", file=sys.stderr)


if __name__ == "__main__":
    main()

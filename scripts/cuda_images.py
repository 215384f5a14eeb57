#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the GPU images a CUDA artifact holds, like the toolkit's
`cuobjdump --list-elf` (which the Debian-less CUDA 13 install here lacks).

    cuda_images.py FILE...

FILE is an executable, shared library or object that dist-opt --target=cuda
wrote (its fat binaries are in the .nv_fatbin section), a fat binary, or an
MLIR file after the gpu-codegen phase (its gpu.object strings). Prints one
line per image: `sm_90 cubin <bytes> bytes`, or `sm_90 ptx ...`; checks
that each cubin is an ELF for EM_CUDA whose flags name the same
architecture as the fat binary's entry. Exits 1 with one error line when a
file holds no image or an image is malformed.
"""
import re
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
EM_CUDA = 190


def fail(message):
    sys.stderr.write("error: " + message + "\n")
    sys.exit(1)


def elf_sections(data):
    """(name, bytes) of each section of a 64-bit little-endian ELF."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = []
    for i in range(shnum):
        (name, kind, _, _, offset, size) = struct.unpack_from(
            "<IIQQQQ", data, shoff + i * shentsize)
        headers.append((name, kind, offset, size))
    strtab = headers[shstrndx]
    out = []
    for name, kind, offset, size in headers:
        start = strtab[2] + name
        end = data.index(b"\0", start)
        label = data[start:end].decode("latin-1")
        # SHT_NOBITS sections have no bytes in the file.
        out.append((label, data[offset:offset + size] if kind != 8 else b""))
    return out


def mlir_objects(text):
    """The bytes of every #gpu.object string of an MLIR file."""
    out = []
    for m in re.finditer(r'#gpu\.object<.*?, "((?:[^"\\]|\\.)*)">', text):
        raw, data, i = m.group(1), bytearray(), 0
        while i < len(raw):
            if raw[i] == "\\" and raw[i + 1] in "\\\"":
                data.extend(raw[i + 1].encode("latin-1"))
                i += 2
            elif raw[i] == "\\":
                data.append(int(raw[i + 1:i + 3], 16))
                i += 3
            else:
                data.extend(raw[i].encode("latin-1"))
                i += 1
        out.append(bytes(data))
    return out


def fatbin_images(blob, where):
    """(arch, kind, payload) of each image of the fat binaries in `blob`
    (several may follow each other, each 8-byte aligned)."""
    images, pos = [], 0
    while pos + 16 <= len(blob):
        magic, _, header, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            if any(blob[pos:pos + 16]):
                fail("%s: no fat binary at offset %d" % (where, pos))
            pos += 8
            continue
        entry, end = pos + header, pos + header + size
        while entry < end:
            kind, _, entry_header, padded = struct.unpack_from(
                "<HHII", blob, entry)
            words = struct.unpack_from("<16I", blob, entry)
            arch = words[7]
            payload = blob[entry + entry_header:
                           entry + entry_header + padded]
            images.append(("sm_%d" % arch,
                           {1: "ptx", 2: "cubin"}.get(kind, "kind%d" % kind),
                           payload))
            entry += entry_header + padded
        pos = (end + 7) & ~7
    return images


def check_cubin(arch, payload, where):
    if payload[:4] != b"\x7fELF":
        fail("%s: the %s image is not an ELF file" % (where, arch))
    machine, = struct.unpack_from("<H", payload, 18)
    flags, = struct.unpack_from("<I", payload, 48)
    if machine != EM_CUDA:
        fail("%s: the %s image is for ELF machine %d, not CUDA" %
             (where, arch, machine))
    # The cubin ABI of CUDA 12.8 and later keeps the SM in bits 8-15.
    elf_arch = "sm_%d" % ((flags >> 8) & 0xFF)
    if elf_arch != arch:
        fail("%s: the %s entry holds a cubin for %s" % (where, arch, elf_arch))


def main():
    if len(sys.argv) < 2:
        fail("usage: cuda_images.py FILE...")
    for path in sys.argv[1:]:
        try:
            data = open(path, "rb").read()
        except OSError as e:
            fail("%s: %s" % (path, e.strerror))
        blobs = [b for name, b in elf_sections(data) if name == ".nv_fatbin"]
        if data[:4] != b"\x7fELF":
            if struct.unpack_from("<I", data, 0)[0] == FATBIN_MAGIC:
                blobs = [data]
            else:
                blobs = mlir_objects(data.decode("latin-1"))
        images = []
        for blob in blobs:
            images += fatbin_images(blob, path)
        if not images:
            fail("%s: no GPU image (not compiled with --target=cuda?)" % path)
        for arch, kind, payload in images:
            if kind == "cubin":
                check_cubin(arch, payload, path)
            print("%s %s %d bytes" % (arch, kind, len(payload)))


if __name__ == "__main__":
    main()

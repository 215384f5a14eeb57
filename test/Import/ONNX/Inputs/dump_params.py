#!/usr/bin/python3
#===- dump_params.py - Print a dist-opt parameter file -------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# Prints the header and index of a parameter file (layout in
# runtime/include/dist_rt/param_format.h) and the values of each float32
# parameter, so that FileCheck can check what the importer wrote:
#
#   params COUNT size FILE_SIZE
#   param NAME dtype DTYPE dims D0xD1 offset OFFSET bytes NBYTES
#   values V0 V1 ...
#
# Exits with 1, saying why, if the file is not a well-formed parameter file.
#
#===----------------------------------------------------------------------===#

import struct
import sys


def fail(msg):
    sys.exit("dump_params.py: " + msg)


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 32 or data[:8] != b"DISTPRM1":
        fail("bad header")
    count, index_offset, file_size = struct.unpack_from("<QQQ", data, 8)
    if file_size != len(data) or index_offset > file_size:
        fail("bad sizes")
    print("params %d size %d" % (count, file_size))
    pos = index_offset
    for _ in range(count):
        (name_len,) = struct.unpack_from("<I", data, pos)
        pos += 4
        name = data[pos:pos + name_len].decode()
        pos += name_len
        dtype, rank = struct.unpack_from("<II", data, pos)
        pos += 8
        dims = struct.unpack_from("<%dq" % rank, data, pos)
        pos += 8 * rank
        offset, nbytes = struct.unpack_from("<QQ", data, pos)
        pos += 16
        if offset % 64 or offset < 32 or offset + nbytes > index_offset:
            fail("bad offset for " + name)
        print("param %s dtype %d dims %s offset %d bytes %d" %
              (name, dtype, "x".join(map(str, dims)), offset, nbytes))
        if dtype == 1:
            values = struct.unpack_from("<%df" % (nbytes // 4), data, offset)
            print("values " + " ".join("%g" % v for v in values))
    if pos != file_size:
        fail("index does not end at the end of the file")


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""Writes an NDJSON file's objects as concatenated MessagePack maps (a .msgpack file of records), with msgpack only.

  python3 ndjson_to_msgpack.py IN.ndjson OUT.msgpack
"""
import json
import sys

import msgpack

with open(sys.argv[1]) as source, open(sys.argv[2], "wb") as out:
    for line in source:
        if line.strip():
            out.write(msgpack.packb(json.loads(line), use_bin_type=True))

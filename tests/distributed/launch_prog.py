"""A tiny program for ``ge launch`` (tests/distributed/test_launch.py): prints its rank, the
world size and its arguments, all-reduces a tensor and prints the result and the compile
report's line of the all-reduce; ``--fail-rank R`` makes rank R exit with status 3 after that."""

from __future__ import annotations

import os
import sys

import numpy as np

import ge.distributed
from ge.es import GraphBuilder
from ge.es import all as es
from ge.graph import DataType, Tensor
from ge.session import Session


def say(*words) -> None:
    os.write(1, (" ".join(str(w) for w in words) + "\n").encode())


rank, size = ge.distributed.get_rank(), ge.distributed.get_world_size()
say("RANK", rank, size, *sys.argv[1:])
b = GraphBuilder("ar")
x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[3])
s = Session()
s.add_graph(1, b.build_and_reset([es.HcomAllReduce(x, reduction="sum", group="hccl_world_group")]))
y = s.run_graph(1, [Tensor(np.arange(3, dtype=np.float32) + rank)])[0].numpy()
say("SUM", rank, *y.tolist())
say("REPORT", rank, *[line.strip() for line in s.compile_report(1).splitlines()
                      if line.strip().startswith("HcomAllReduce")])
if "--fail-rank" in sys.argv and int(sys.argv[sys.argv.index("--fail-rank") + 1]) == rank:
    sys.exit(3)

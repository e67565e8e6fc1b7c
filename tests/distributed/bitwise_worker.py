"""One rank of tests/distributed/test_bitwise.py: ge's HcomAllReduce, HcomReduceScatter,
HcomAllGather and HcomBroadcast (which work in place on the output's buffer where the tensor is
one row-major block) give, bit for bit, what mpi4py's collectives on numpy arrays give, for
each reduction and dtype (float16 reduced in float32, rounded once). Prints ``OK <rank>``."""

from __future__ import annotations

import os

from mpi4py import MPI  # first: ge-rs shares mpi4py's MPI

import numpy as np

from ge.es import GraphBuilder
from ge.es import all as es
from ge.graph import DataType, Tensor
from ge.session import Session

WORLD = "hccl_world_group"
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
DTYPES = {np.float32: DataType.DT_FLOAT, np.int8: DataType.DT_INT8, np.int16: DataType.DT_INT16,
          np.int32: DataType.DT_INT32, np.int64: DataType.DT_INT64, np.float16: DataType.DT_FLOAT16}
OPS = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD}


def run(x: np.ndarray, build) -> np.ndarray:
    b = GraphBuilder("g")
    h = b.create_input(0, data_type=DTYPES[x.dtype.type], shape=list(x.shape))
    s = Session()
    s.add_graph(1, b.build_and_reset([build(h)]))
    return s.run_graph(1, [Tensor(x)])[0].numpy()


def data(dt, shape, salt: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * salt + rank)
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, 7, size=shape).astype(dt)
    return (rng.standard_normal(shape) * 3).astype(dt)


def expect_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.shape)
    assert got.tobytes() == want.tobytes(), f"{what}: not bit-identical to mpi4py's"


for k, (dt, shape) in enumerate([(np.float32, (4 * size, 33)), (np.int8, (2 * size, 5, 3)),
                                 (np.int32, (size * 7,)), (np.int64, (size, 1)), (np.int16, (size * 3, 2)),
                                 (np.float16, (size * 5, 4))]):
    x = data(dt, shape, k)
    wide = dt == np.float16
    for red, op in OPS.items():
        if red == "prod" and np.issubdtype(dt, np.integer):
            x = np.minimum(x, 2).astype(dt)  # small products: no overflow
        xs = x.astype(np.float32) if wide else x
        want = np.empty_like(xs)
        comm.Allreduce(xs, want, op=op)
        got = run(x, lambda h: es.HcomAllReduce(h, reduction=red, group=WORLD))
        expect_same(got, want.astype(dt) if wide else want, f"AllReduce {red} {dt.__name__}")
        want_rs = np.empty((shape[0] // size, *shape[1:]), xs.dtype)
        comm.Reduce_scatter_block(xs, want_rs, op=op)
        got = run(x, lambda h: es.HcomReduceScatter(h, reduction=red, group=WORLD, rank_size=size))
        expect_same(got, want_rs.astype(dt) if wide else want_rs, f"ReduceScatter {red} {dt.__name__}")
    want_ag = np.empty((size * shape[0], *shape[1:]), dt)
    comm.Allgather(x, want_ag)
    expect_same(run(x, lambda h: es.HcomAllGather(h, rank_size=size, group=WORLD)), want_ag,
                f"AllGather {dt.__name__}")
    root = size - 1
    want_bc = x.copy()
    comm.Bcast(want_bc, root=root)
    expect_same(run(x, lambda h: es.HcomBroadcast([h], 1, root_rank=root, group=WORLD)[0]), want_bc,
                f"Broadcast {dt.__name__}")

os.write(1, f"OK {rank}\n".encode())

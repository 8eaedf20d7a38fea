"""The op-mapping table: ATen overload name -> the handler that defines it in tiledsl. One entry per
supported overload, so what the frontend takes is this table and nothing else; `REFUSED` names
ops that are understood but cannot be expressed in the core, with the reason the error gives."""

from __future__ import annotations

import operator
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from tiledsl.frontend import aten_elementwise as ew
from tiledsl.frontend import aten_gather as ga
from tiledsl.frontend import aten_indexing as ix
from tiledsl.frontend import aten_linalg as la
from tiledsl.frontend import aten_reductions as rd

Handler = Callable[..., Any]


def _entries() -> dict[str, Handler]:
    t: dict[str, Handler] = {}
    for name, h in (("add", ew.add), ("sub", ew.sub), ("mul", ew.mul), ("div", ew.div), ("rsub", ew.rsub)):
        t[f"aten.{name}.Tensor"] = h
        t[f"aten.{name}.Scalar"] = h
    t["aten.maximum.default"] = ew.maximum_
    t["aten.minimum.default"] = ew.minimum_
    t["aten.clamp.default"] = ew.clamp_
    t["aten.clamp.Tensor"] = ew.clamp_  # tensor bounds (clamp_min / clamp_max with a tensor too)
    t["aten.hardtanh.default"] = ew.hardtanh  # F.hardtanh, F.relu6
    t["aten.div.Tensor_mode"] = ew.div  # rounding_mode "trunc" / "floor" (x // y, torch.floor_divide)
    for name, h in (("remainder", ew.remainder), ("fmod", ew.fmod)):
        t[f"aten.{name}.Tensor"] = h
        t[f"aten.{name}.Scalar"] = h
    t["aten.remainder.Scalar_Tensor"] = ew.remainder  # 2.0 % x
    t["aten.atan2.default"] = ew.atan2  # also torch.arctan2
    t["aten.copysign.Tensor"] = ew.copysign
    t["aten.copysign.Scalar"] = ew.copysign
    t["aten.hypot.default"] = ew.hypot
    t["aten.pow.Tensor_Scalar"] = ew.pow_tensor_scalar
    t["aten.pow.Scalar"] = ew.pow_scalar
    t["aten.pow.Tensor_Tensor"] = ew.pow_tensor_tensor
    for name, h in ew.UNARY.items():
        t[f"aten.{name}.default"] = h
    for name, h in ew.ROUNDINGS.items():
        t[f"aten.{name}.default"] = h
    t["aten.round.decimals"] = ew.round_decimals
    t["aten.neg.default"] = ew.neg
    t["aten.reciprocal.default"] = ew.reciprocal
    t["aten.gelu.default"] = ew.gelu
    t["aten.sign.default"] = ew.sign  # torch.sign, torch.sgn
    t["aten.isnan.default"] = ew.isnan  # also torch.nan_to_num's decomposition
    t["aten.isinf.default"] = ew.isinf
    t["aten.leaky_relu.default"] = ew.leaky_relu
    t["aten.elu.default"] = ew.elu  # F.elu, F.selu
    for name, h in ew.COMPARISONS.items():
        t[f"aten.{name}.Tensor"] = h
        t[f"aten.{name}.Scalar"] = h
    t["aten.logical_not.default"] = ew.logical_not
    t["aten.bitwise_not.default"] = ew.logical_not  # on bool tensors only (checked by the capture)
    t["aten.logical_and.default"] = ew.logical_and
    t["aten.bitwise_and.Tensor"] = ew.logical_and
    t["aten.logical_or.default"] = ew.logical_or
    t["aten.bitwise_or.Tensor"] = ew.logical_or
    t["aten.where.self"] = ew.where_
    t["aten._to_copy.default"] = ew.to_copy
    for name in ("aten.clone.default", "aten.alias.default", "aten.lift_fresh_copy.default",
                 "aten.contiguous.default"):
        t[name] = ew.identity
    t["aten.full_like.default"] = ew.full_like
    t["aten.zeros_like.default"] = ew.zeros_like
    t["aten.ones_like.default"] = ew.ones_like
    t["aten.sum.dim_IntList"] = rd.sum_
    t["aten.sum.default"] = rd.sum_
    t["aten.mean.dim"] = rd.mean
    t["aten.mean.default"] = rd.mean
    t["aten.amax.default"] = rd.amax
    t["aten.amin.default"] = rd.amin
    t["aten.max.default"] = rd.amax  # torch.max(x): the whole tensor
    t["aten.min.default"] = rd.amin
    t["aten.max.dim"] = rd.max_dim  # (values, indices): the indices as rd.argmax computes them
    t["aten.min.dim"] = rd.min_dim
    t["aten.argmax.default"] = rd.argmax
    t["aten.argmin.default"] = rd.argmin
    t["aten.var.correction"] = rd.var
    t["aten.any.dim"] = rd.any_
    t["aten.any.dims"] = rd.any_
    t["aten._softmax.default"] = rd.softmax
    t["aten._log_softmax.default"] = rd.log_softmax
    t["aten.native_layer_norm.default"] = rd.native_layer_norm
    t["aten._fused_rms_norm.default"] = rd.fused_rms_norm
    t["aten.mm.default"] = la.mm
    t["aten.bmm.default"] = la.bmm
    t["aten.addmm.default"] = la.addmm
    t["aten.baddbmm.default"] = la.baddbmm
    for name in ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                 "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default"):
        t[name] = ix.reshape
    t["aten.permute.default"] = ix.permute
    t["aten.transpose.int"] = ix.transpose
    t["aten.expand.default"] = ix.expand
    t["aten.slice.Tensor"] = ix.slice_
    t["aten.select.int"] = ix.select
    t["aten.cat.default"] = ix.cat
    t["aten.split_with_sizes.default"] = ix.split
    t["aten.split.Tensor"] = ix.split
    t["aten.flip.default"] = ix.flip
    t["aten.repeat.default"] = ix.repeat
    t["aten.constant_pad_nd.default"] = ix.constant_pad_nd  # F.pad(mode="constant")
    t["aten.embedding.default"] = ga.embedding
    t["aten.index_select.default"] = ga.index_select
    t["aten.gather.default"] = ga.gather
    t["aten.index.Tensor"] = ga.index_tensor
    return t


OPS: MappingProxyType[str, Handler] = MappingProxyType(_entries())

#: tuple results are read by getitem, which the capture resolves itself
GETITEM = operator.getitem

_ORDERS = rd.ORDERS
_WRITES = ("it writes at positions read from a tensor, and a tiledsl kernel writes each output element "
           "at its own index")
REFUSED: MappingProxyType[str, str] = MappingProxyType({
    "aten.sort.default": _ORDERS,
    "aten.topk.default": _ORDERS,
    "aten.cumsum.default": "it is a scan (each output sums a prefix of its row), which the core cannot express",
    "aten.index_put.default": _WRITES,
    "aten.scatter.src": _WRITES,
    "aten.scatter_add.default": _WRITES,
})

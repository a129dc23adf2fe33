"""Modules with PyTorch's names and layouts, and OneFlow's nn.Graph."""

from . import functional
from .graph import Graph
from .module import Module
from .modules import (GELU, CausalSelfAttention, CrossEntropyLoss, Dropout,
                      Embedding, LayerNorm, Linear, ModuleList, ReLU,
                      Sequential, Tanh)
from .parameter import Parameter

__all__ = ["Graph", "Module", "Parameter", "functional", "Linear", "ReLU",
           "GELU", "Tanh", "LayerNorm", "Embedding", "Dropout", "Sequential",
           "ModuleList", "CrossEntropyLoss", "CausalSelfAttention"]

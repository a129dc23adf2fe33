"""Runs the installed mlir-tblgen over ODS files (docs/design.md#building-offline)."""

load("@rules_cc//:defs.bzl", "cc_library")

def td_library(name, srcs, deps = [], visibility = None):
    """A set of .td files (and the .td files they include)."""
    native.filegroup(
        name = name,
        srcs = srcs + deps,
        visibility = visibility,
    )

def gentbl_cc_library(name, td_file, tbl_outs, deps = [], visibility = None):
    """Generates headers with mlir-tblgen and wraps them in a cc_library.

    Args:
      name: the cc_library holding the generated files.
      td_file: the root .td file.
      tbl_outs: list of (flags, output file) pairs, one mlir-tblgen run each.
      deps: td_library targets the root file includes.
      visibility: visibility of the generated cc_library.
    """
    outs = []
    for i, (flags, out) in enumerate(tbl_outs):
        native.genrule(
            name = "%s_gen_%d" % (name, i),
            srcs = [td_file] + deps + ["@llvm//:mlir_td_files"],
            outs = [out],
            tools = ["@llvm//:bin/mlir-tblgen"],
            cmd = ("$(location @llvm//:bin/mlir-tblgen) %s " +
                   "-I external/llvm/include -I . -I $(GENDIR) " +
                   "$(location %s) -o $@") % (" ".join(flags), td_file),
        )
        outs.append(out)
    cc_library(
        name = name,
        textual_hdrs = outs,
        visibility = visibility,
    )

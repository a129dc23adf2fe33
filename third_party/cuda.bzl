"""Compiles CUDA sources with nvcc for Hopper (sm_90) (docs/design.md#building-offline)."""

load("@cuda//:config.bzl", "CUDA_AVAILABLE")
load("@rules_cc//:defs.bzl", "cc_library")

_NVCC_FLAGS = [
    "-gencode",
    "arch=compute_90,code=sm_90",
    "-std=c++17",
    "-O2",
    "-Xcompiler",
    "-fPIC",
]

# nvcc finds cicc and libdevice relative to the path it was started from, and
# the @cuda repository links only bin/, include/ and lib64/ of the toolkit.
# Resolving the symlink runs nvcc from the real toolkit, sandboxed or not.
_RUN_NVCC = 'nvcc="$(readlink -f "$1")"; shift; exec "$nvcc" "$@"'

def _nvcc_objects_impl(ctx):
    contexts = [dep[CcInfo].compilation_context for dep in ctx.attr.deps]
    headers = depset(ctx.files.hdrs, transitive = [c.headers for c in contexts])
    flags = _NVCC_FLAGS + ["-I.", "-I" + ctx.bin_dir.path]
    for c in contexts:
        dirs = c.quote_includes.to_list() + c.includes.to_list()
        flags += ["-I" + d for d in dirs]
        # nvcc takes -isystem and its directory as two arguments.
        for d in c.system_includes.to_list():
            flags += ["-isystem", d]
        flags += ["-D" + d for d in c.defines.to_list()]
    flags += ctx.attr.copts

    outs = []
    for src in ctx.files.srcs:
        # Bazel links a plain ".o" into both static and shared links, which
        # -fPIC makes safe.
        obj = ctx.actions.declare_file(
            "_objs/%s/%s.o" % (ctx.label.name, src.basename.rsplit(".", 1)[0]),
        )
        ctx.actions.run_shell(
            command = _RUN_NVCC,
            arguments = [ctx.file._nvcc.path] + flags +
                        ["-c", src.path, "-o", obj.path],
            inputs = depset([src], transitive = [headers]),
            outputs = [obj],
            tools = [ctx.file._nvcc],
            # nvcc calls the host g++ from PATH.
            use_default_shell_env = True,
            mnemonic = "NvccCompile",
            progress_message = "Compiling CUDA %s" % src.short_path,
        )
        outs.append(obj)
    return [DefaultInfo(files = depset(outs))]

_nvcc_objects = rule(
    implementation = _nvcc_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "_nvcc": attr.label(
            default = "@cuda//:bin/nvcc",
            allow_single_file = True,
            cfg = "exec",
        ),
    },
)

def cuda_library(
        name,
        srcs,
        hdrs = [],
        deps = [],
        copts = [],
        alwayslink = False,
        **kwargs):
    """A cc_library whose .cu sources nvcc compiles for sm_90.

    Without a CUDA toolkit the target is incompatible, so `bazel test //...`
    skips it and everything that depends on it.

    Args:
      name: the cc_library to create.
      srcs: .cu files.
      hdrs: headers of the host API; .cu files may include them and the
        headers of deps.
      deps: cc_library targets the sources and the host API need.
      copts: extra nvcc flags.
      alwayslink: link every kernel even if nothing references it by name.
      **kwargs: passed to the cc_library (visibility, testonly, ...).
    """
    if not CUDA_AVAILABLE:
        cc_library(
            name = name,
            hdrs = hdrs,
            target_compatible_with = ["@platforms//:incompatible"],
            **kwargs
        )
        return
    _nvcc_objects(
        name = name + "_nvcc",
        srcs = srcs,
        hdrs = hdrs,
        deps = deps,
        copts = copts,
        testonly = kwargs.get("testonly", False),
        visibility = ["//visibility:private"],
    )
    cc_library(
        name = name,
        srcs = [name + "_nvcc"],
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart"],
        alwayslink = alwayslink,
        **kwargs
    )

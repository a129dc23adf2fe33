# mpirun_flags.sh - launch ranks with OpenMPI's mpirun, here and under
# `bazel test`.
#
# Source it from bash, then call zerosbp_mpirun with the usual mpirun
# arguments:
#
#   source runtime/comm/mpirun_flags.sh
#   zerosbp_mpirun -n 2 path/to/binary --flag
#
# An mpirun command line of your own needs, after sourcing (for the
# environment), "${ZEROSBP_MPIRUN_FLAGS[@]}" and the two private-directory
# flags below; zerosbp_mpirun adds those and removes the directory.
#
# What the flags are for:
#   OMPI_ALLOW_RUN_AS_ROOT*      CI and containers run as root; mpirun
#                                refuses that otherwise.
#   --oversubscribe              more ranks than cores (CI has 2).
#   --bind-to none               no core binding: the ranks of concurrent
#                                runs (parallel tests) would all be pinned
#                                to the first cores.
#   --mca btl self,vader         shared memory only, through the ob1 PML:
#   --mca pml ob1                no TCP/openib/UCX probing (Debian's OpenMPI
#                                has UCX) in containers and sandboxes.
#   --mca btl_vader_single_copy_mechanism none
#                                CMA (process_vm_readv) needs ptrace
#                                permission that containers and sandboxes
#                                may lack.
#   --mca plm isolated           every rank on this machine: mpirun starts
#                                them itself and needs no ssh/rsh (without
#                                it mpirun fails where ssh is missing).
#   --mca orte_tmpdir_base DIR   a private directory under /tmp for the
#   --mca btl_vader_backing_directory DIR
#                                session files and the shared-memory
#                                segments, removed afterwards even when ranks
#                                were killed. Needed for concurrent runs:
#                                OpenMPI names its segments in /dev/shm after
#                                a job id derived from mpirun's pid, and
#                                under `bazel test` every test has its own
#                                pid namespace, so two tests' mpiruns can
#                                have the same pid and share segments (ranks
#                                then crash in mca_btl_vader or hang).
#
# ZEROSBP_MPIRUN overrides the mpirun binary (default: mpirun on PATH).
# ZEROSBP_MPIRUN_TIMEOUT=SECONDS ends mpirun (and so every rank) after that
# long: the status is then 124, as with timeout(1).

export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No warnings about network components the job does not use.
export OMPI_MCA_btl_base_warn_component_unused=0

ZEROSBP_MPIRUN_FLAGS=(
  --oversubscribe
  --bind-to none
  --mca btl self,vader
  --mca pml ob1
  --mca btl_vader_single_copy_mechanism none
  --mca plm isolated
)

# zerosbp_mpirun ARGS...: mpirun with the flags above; returns its status.
zerosbp_mpirun() {
  local session status
  session=$(mktemp -d /tmp/zerosbp-mpi.XXXXXX)
  status=0
  local limit=()
  if [[ -n "${ZEROSBP_MPIRUN_TIMEOUT:-}" ]]; then
    limit=(timeout --kill-after=10 "$ZEROSBP_MPIRUN_TIMEOUT")
  fi
  "${limit[@]}" "${ZEROSBP_MPIRUN:-mpirun}" \
    "${ZEROSBP_MPIRUN_FLAGS[@]}" --mca orte_tmpdir_base "$session" \
    --mca btl_vader_backing_directory "$session" "$@" ||
    status=$?
  rm -rf "$session"
  return "$status"
}

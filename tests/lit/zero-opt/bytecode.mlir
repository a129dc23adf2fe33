// Bytecode is refused with a one-line error instead of being parsed (MLIR 22's
// bytecode reader can abort on malformed files).
// RUN: zero-opt %s --emit-bytecode -o %t.mlirbc
// RUN: not zero-opt %t.mlirbc 2>&1 | FileCheck %s -DFILE=%t.mlirbc
// RUN: not zero-opt %t.does-not-exist 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK: zero-opt: [[FILE]]: MLIR bytecode input is not supported; pass textual IR
// MISSING: zero-opt: {{.*}}does-not-exist: cannot open the input graph (No such file or directory)

func.func @f() {
  return
}

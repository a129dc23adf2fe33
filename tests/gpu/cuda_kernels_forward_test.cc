//===- cuda_kernels_forward_test.cc - forward CUDA kernels against the CPU ===//
//
// Each op's CUDA kernel on device copies of random inputs (odd sizes, f32
// and f16/bf16 storage, in-place results) against its CPU kernel on the
// same inputs. Values computed in f32 agree to 1e-5 relative plus a small
// absolute term; data movement (casts, gathers, shape ops, fill) agrees bit
// for bit. Skips itself without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "tests/gpu/gpu_test_util.h"

namespace zerosbp::runtime::gputest {
namespace {

class CudaKernelsForward : public CudaDeviceTest {};

using Shape = std::vector<int64_t>;

TEST_F(CudaKernelsForward, BinaryOpsSameShapeAndBroadcast) {
  struct Case {
    Shape lhs, rhs, out;
  };
  const Case cases[] = {
      {{37, 129}, {37, 129}, {37, 129}},
      {{5, 1, 7}, {3, 1}, {5, 3, 7}},
      {{}, {4, 6}, {4, 6}},
      {{4, 6}, {6}, {4, 6}},
      {{1, 1}, {1}, {1, 1}},
      {{2, 3, 1, 5}, {3, 4, 1}, {2, 3, 4, 5}},
      {{3, 2500}, {2500}, {3, 2500}},
  };
  unsigned seed = 1;
  for (const char *op : {"nn.add", "nn.sub", "nn.mul", "nn.div"}) {
    for (const Case &c : cases) {
      HostTensor a = randomTensor(DType::F32, c.lhs, seed++);
      // Divisors away from zero.
      HostTensor b = randomTensor(DType::F32, c.rhs, seed++, 0.5, 2.0);
      expectMatchesCpu(op, {}, {&a, &b}, {{DType::F32, c.out}});
    }
  }
}

TEST_F(CudaKernelsForward, BinaryOpsMixedStorageAndInPlace) {
  HostTensor a16 = randomTensor(DType::BF16, {33, 65}, 1);
  HostTensor b32 = randomTensor(DType::F32, {65}, 2);
  HostTensor h16 = randomTensor(DType::F16, {33, 65}, 3);
  expectMatchesCpu("nn.add", {}, {&a16, &b32}, {{DType::F16, {33, 65}}});
  expectMatchesCpu("nn.mul", {}, {&h16, &a16}, {{DType::BF16, {33, 65}}});
  expectMatchesCpu("nn.sub", {}, {&a16, &h16}, {{DType::F32, {33, 65}}});
  // The result in the bytes of the operand of its shape, as the planner
  // lays out an in-place update.
  HostTensor x = randomTensor(DType::F32, {3, 1000}, 4);
  HostTensor row = randomTensor(DType::F32, {1000}, 5);
  expectMatchesCpu("nn.sub", {}, {&x, &row}, {{DType::F32, {3, 1000}, 0}}, {},
                   "lhs in place");
  expectMatchesCpu("nn.mul", {}, {&x, &x}, {{DType::F32, {3, 1000}, 1}}, {},
                   "rhs in place");
  expectMatchesCpu("nn.add", {}, {&a16, &b32}, {{DType::BF16, {33, 65}, 0}}, {},
                   "bf16 in place");
}

TEST_F(CudaKernelsForward, BiasAddAndScale) {
  HostTensor x = randomTensor(DType::F32, {4, 33, 65}, 1);
  HostTensor bias = randomTensor(DType::F32, {65}, 2);
  HostTensor x16 = randomTensor(DType::BF16, {7, 129}, 3);
  HostTensor bias16 = randomTensor(DType::BF16, {129}, 4);
  expectMatchesCpu("nn.bias_add", {}, {&x, &bias}, {{DType::F32, {4, 33, 65}}});
  expectMatchesCpu("nn.bias_add", {}, {&x16, &bias16},
                   {{DType::BF16, {7, 129}, 0}});
  AttrMap factor = makeAttrs({{"factor", 0.37}});
  expectMatchesCpu("nn.scale", factor, {&x}, {{DType::F32, {4, 33, 65}}});
  expectMatchesCpu("nn.scale", factor, {&x16}, {{DType::F16, {7, 129}}});
  expectMatchesCpu("nn.scale", factor, {&x}, {{DType::F32, {4, 33, 65}, 0}});
  // Rows of a multiple of 8 elements take the vector path's row broadcast,
  // in every storage type and in place.
  HostTensor rows = randomTensor(DType::BF16, {5, 3, 64}, 5);
  HostTensor rowBias = randomTensor(DType::F32, {64}, 6);
  for (DType type : {DType::BF16, DType::F16, DType::F32})
    expectMatchesCpu("nn.bias_add", {}, {&rows, &rowBias}, {{type, {5, 3, 64}}},
                     {}, dtypeName(type));
  expectMatchesCpu("nn.bias_add", {}, {&rows, &rowBias},
                   {{DType::BF16, {5, 3, 64}, 0}}, {}, "in place");
  HostTensor rows32 = randomTensor(DType::F32, {2, 1024}, 7);
  expectMatchesCpu("nn.scale", factor, {&rows32}, {{DType::BF16, {2, 1024}}});
}

TEST_F(CudaKernelsForward, DropoutMasksLikeTheCpuBitForBit) {
  HostTensor step = makeTensor(DType::I64, {}, {7});
  AttrMap attrs = makeAttrs({{"p", 0.3},
                             {"seed", int64_t(-2)},
                             {"stream", int64_t(5)},
                             {"micro_batch", int64_t(2)}});
  for (DType type : {DType::F32, DType::BF16, DType::F16}) {
    HostTensor x = randomTensor(type, {37, 129}, 1);
    expectMatchesCpu("nn.dropout", attrs, {&x, &step}, {{type, {37, 129}}},
                     exactBits(), dtypeName(type));
    expectMatchesCpu("nn.dropout", attrs, {&x, &step}, {{type, {37, 129}, 0}},
                     exactBits(), "in place");
  }
  // A column block of a larger global tensor.
  AttrMap shard = attrs;
  shard.set("global_shape", std::vector<int64_t>{4, 37, 300});
  shard.set("shard_offsets", std::vector<int64_t>{2, 0, 129});
  HostTensor block = randomTensor(DType::F32, {2, 37, 129}, 2);
  expectMatchesCpu("nn.dropout", shard, {&block, &step},
                   {{DType::F32, {2, 37, 129}}}, exactBits(), "shard");
}

TEST_F(CudaKernelsForward, BlockQuantizationLikeTheCpuBitForBit) {
  // Blocks of several sizes with a short last one, a zero block and a NaN
  // block; codes, scales and dequantized values (NaN as 0x7fc00000 on
  // both) equal the CPU's bits.
  std::vector<double> values(4099);
  HostTensor random = randomTensor(DType::F32, {4099}, 11, -3.0, 2.0);
  for (int64_t i = 0; i < 4099; ++i)
    values[i] = i < 64 ? 0.0 : (i == 200 ? NAN : random.get(i));
  for (DType type : {DType::F32, DType::BF16}) {
    HostTensor x = makeTensor(type, {4099}, values);
    for (int64_t bits : {8, 4})
      for (int64_t block : {2, 64, 100, 2048}) {
        AttrMap attrs = makeAttrs({{"block_size", block}, {"bits", bits}});
        int64_t blocks = (4099 + block - 1) / block;
        int64_t bytes = (4099 * bits + 7) / 8;
        std::string what = std::string(dtypeName(type)) + ", " +
                           std::to_string(bits) + " bits, block " +
                           std::to_string(block);
        expectMatchesCpu("nn.quantize", attrs, {&x},
                         {{DType::I8, {bytes}}, {DType::F32, {blocks}}},
                         exactBits(), what);
        HostTensor codes = randomTensor(DType::I8, {bytes}, 12, -128.0, 128.0);
        HostTensor scales = randomTensor(DType::F32, {blocks}, 13, 0.0, 0.1);
        scales.set(1, NAN);
        scales.set(blocks - 1, INFINITY); // Codes 0 there give NaN too.
        expectMatchesCpu("nn.dequantize", attrs, {&codes, &scales},
                         {{type, {4099}}}, exactBits(), what);
      }
  }
}

TEST_F(CudaKernelsForward, CastRoundsLikeTheCpuBitForBit) {
  // Values that exercise every branch of the f16 and bf16 rounding: ties,
  // subnormals, overflow to infinity, NaN, signed zeros.
  std::vector<double> special = {
      0.0,          -0.0,          1.0,    -1.5,     65504.0,   65520.0,
      1e5,          -1e9,          6.1e-5, 3e-8,     -2e-7,     1e-40,
      1.0009765625, 1.00048828125, 3.0e38, INFINITY, -INFINITY, NAN};
  HostTensor f64 = makeTensor(DType::F64, {18}, special);
  HostTensor f32 = makeTensor(DType::F32, {18}, special);
  HostTensor random = randomTensor(DType::F32, {4097}, 1, -70000.0, 70000.0);
  for (DType to : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    expectMatchesCpu("nn.cast", {}, {&f32}, {{to, {18}}}, exactBits(),
                     std::string("f32 to ") + dtypeName(to));
    expectMatchesCpu("nn.cast", {}, {&f64}, {{to, {18}}}, exactBits(),
                     std::string("f64 to ") + dtypeName(to));
    expectMatchesCpu("nn.cast", {}, {&random}, {{to, {4097}}}, exactBits(),
                     std::string("random f32 to ") + dtypeName(to));
  }
  HostTensor half = randomTensor(DType::F16, {999}, 2, -100.0, 100.0);
  HostTensor brain = randomTensor(DType::BF16, {999}, 3, -100.0, 100.0);
  expectMatchesCpu("nn.cast", {}, {&half}, {{DType::BF16, {999}}}, exactBits(),
                   "f16 to bf16");
  expectMatchesCpu("nn.cast", {}, {&brain}, {{DType::F16, {999}}}, exactBits(),
                   "bf16 to f16");
  expectMatchesCpu("nn.cast", {}, {&brain}, {{DType::F32, {999}}}, exactBits(),
                   "bf16 to f32");
  expectMatchesCpu("nn.cast", {}, {&half}, {{DType::F16, {999}, 0}},
                   exactBits(), "in place");
}

TEST_F(CudaKernelsForward, Activations) {
  HostTensor x = randomTensor(DType::F32, {3001}, 1, -6.0, 6.0);
  std::vector<double> edges = {0.0,      -0.0,      1e-4,   -30.0, 30.0,
                               0.62,     0.63,      -0.625, 100.0, -100.0,
                               INFINITY, -INFINITY, NAN};
  for (size_t i = 0; i < edges.size(); ++i)
    x.set(static_cast<int64_t>(i), edges[i]);
  HostTensor x16 = randomTensor(DType::BF16, {17, 33}, 2, -4.0, 4.0);
  for (const char *op : {"nn.relu", "nn.gelu", "nn.tanh"}) {
    expectMatchesCpu(op, {}, {&x}, {{DType::F32, {3001}}});
    expectMatchesCpu(op, {}, {&x16}, {{DType::BF16, {17, 33}}});
    expectMatchesCpu(op, {}, {&x16}, {{DType::F32, {17, 33}}});
    expectMatchesCpu(op, {}, {&x}, {{DType::F32, {3001}, 0}}, {}, "in place");
  }
}

TEST_F(CudaKernelsForward, MatmulAllTransposesAndOddSizes) {
  // op(A) is 37 x 53 and op(B) 53 x 29 in every layout. Sums of 53 products
  // in another order: errors of a few f32 ulps of the sums' magnitude.
  Tolerance tolerance{1e-5, 1e-5};
  for (bool transA : {false, true}) {
    for (bool transB : {false, true}) {
      HostTensor a =
          randomTensor(DType::F32, transA ? Shape{53, 37} : Shape{37, 53}, 1);
      HostTensor b =
          randomTensor(DType::F32, transB ? Shape{29, 53} : Shape{53, 29}, 2);
      AttrMap attrs =
          makeAttrs({{"transpose_lhs", transA}, {"transpose_rhs", transB}});
      std::string what = std::string("transposes ") + (transA ? "T" : "N") +
                         (transB ? "T" : "N");
      expectMatchesCpu("nn.matmul", attrs, {&a, &b}, {{DType::F32, {37, 29}}},
                       tolerance, what);
    }
  }
  HostTensor v = randomTensor(DType::F32, {1, 300}, 3);
  HostTensor w = randomTensor(DType::F32, {300, 1}, 4);
  expectMatchesCpu("nn.matmul", {}, {&v, &w}, {{DType::F32, {1, 1}}},
                   {1e-5, 1e-5}, "dot");
  expectMatchesCpu("nn.matmul", {}, {&w, &v}, {{DType::F32, {300, 300}}},
                   tolerance, "outer");
}

TEST_F(CudaKernelsForward, MatmulStorageTypes) {
  Tolerance tolerance{2e-5, 1e-5};
  HostTensor a16 = randomTensor(DType::BF16, {64, 96}, 1);
  HostTensor b16 = randomTensor(DType::BF16, {96, 40}, 2);
  HostTensor ah = randomTensor(DType::F16, {64, 96}, 3);
  HostTensor bh = randomTensor(DType::F16, {96, 40}, 4);
  HostTensor b32 = randomTensor(DType::F32, {96, 40}, 5);
  expectMatchesCpu("nn.matmul", {}, {&a16, &b16}, {{DType::F32, {64, 40}}},
                   tolerance, "bf16 x bf16 -> f32");
  expectMatchesCpu("nn.matmul", {}, {&a16, &b16}, {{DType::BF16, {64, 40}}},
                   tolerance, "bf16 x bf16 -> bf16");
  expectMatchesCpu("nn.matmul", {}, {&ah, &bh}, {{DType::F16, {64, 40}}},
                   tolerance, "f16 x f16 -> f16");
  expectMatchesCpu("nn.matmul", {}, {&ah, &b16}, {{DType::F32, {64, 40}}},
                   tolerance, "f16 x bf16 -> f32");
  expectMatchesCpu("nn.matmul", {}, {&a16, &b32}, {{DType::BF16, {64, 40}}},
                   tolerance, "bf16 x f32 -> bf16");
  expectMatchesCpu("nn.matmul", {}, {&ah, &bh}, {{DType::BF16, {64, 40}}},
                   tolerance, "f16 x f16 -> bf16");
}

TEST_F(CudaKernelsForward, MatmulEmptyAndInPlace) {
  HostTensor a = randomTensor(DType::F32, {4, 0}, 1);
  HostTensor b = randomTensor(DType::F32, {0, 3}, 2);
  expectMatchesCpu("nn.matmul", {}, {&a, &b}, {{DType::F32, {4, 3}}},
                   exactBits(), "empty sum");
  HostTensor c = randomTensor(DType::F32, {0, 5}, 3);
  HostTensor d = randomTensor(DType::F32, {5, 3}, 4);
  expectMatchesCpu("nn.matmul", {}, {&c, &d}, {{DType::F32, {0, 3}}}, {},
                   "no rows");
  // The result over its own lhs: the product must read the lhs first.
  HostTensor square = randomTensor(DType::F32, {24, 24}, 5);
  HostTensor other = randomTensor(DType::F32, {24, 24}, 6);
  expectMatchesCpu("nn.matmul", {}, {&square, &other},
                   {{DType::F32, {24, 24}, 0}}, {1e-5, 1e-5}, "in place");
}

TEST_F(CudaKernelsForward, BatchMatmul) {
  Tolerance tolerance{1e-5, 1e-5};
  HostTensor a = randomTensor(DType::F32, {3, 17, 9}, 1);
  HostTensor b = randomTensor(DType::F32, {3, 9, 11}, 2);
  expectMatchesCpu("nn.batch_matmul", {}, {&a, &b}, {{DType::F32, {3, 17, 11}}},
                   tolerance);
  HostTensor q = randomTensor(DType::F32, {2, 3, 5, 7}, 3);
  HostTensor k = randomTensor(DType::F32, {2, 3, 4, 7}, 4);
  expectMatchesCpu("nn.batch_matmul", makeAttrs({{"transpose_rhs", true}}),
                   {&q, &k}, {{DType::F32, {2, 3, 5, 4}}}, tolerance, "q k^T");
  HostTensor p = randomTensor(DType::BF16, {2, 3, 7, 5}, 5);
  HostTensor v = randomTensor(DType::BF16, {2, 3, 7, 6}, 6);
  expectMatchesCpu("nn.batch_matmul", makeAttrs({{"transpose_lhs", true}}),
                   {&p, &v}, {{DType::BF16, {2, 3, 5, 6}}}, tolerance,
                   "bf16 p^T v");
}

TEST_F(CudaKernelsForward, LayerNorm) {
  struct Case {
    Shape shape;
    DType type;
  };
  const Case cases[] = {{{7, 129}, DType::F32},  {{3, 5, 64}, DType::F32},
                        {{1, 1000}, DType::F32}, {{300, 33}, DType::F32},
                        {{9, 1}, DType::F32},    {{6, 77}, DType::BF16}};
  unsigned seed = 1;
  for (const Case &c : cases) {
    int64_t n = c.shape.back();
    HostTensor x = randomTensor(c.type, c.shape, seed++, -3.0, 5.0);
    HostTensor gamma = randomTensor(DType::F32, {n}, seed++, 0.5, 1.5);
    HostTensor beta = randomTensor(DType::F32, {n}, seed++);
    expectMatchesCpu("nn.layer_norm", {}, {&x, &gamma, &beta},
                     {{c.type, c.shape}}, {1e-5, 1e-5});
  }
  HostTensor x = randomTensor(DType::F32, {5, 300}, 20);
  HostTensor gamma = randomTensor(DType::BF16, {300}, 21);
  HostTensor beta = randomTensor(DType::F16, {300}, 22);
  AttrMap epsilon = makeAttrs({{"epsilon", 1e-3}});
  expectMatchesCpu("nn.layer_norm", epsilon, {&x, &gamma, &beta},
                   {{DType::F32, {5, 300}}}, {1e-5, 1e-5}, "epsilon");
  expectMatchesCpu("nn.layer_norm", epsilon, {&x, &gamma, &beta},
                   {{DType::F32, {5, 300}, 0}}, {1e-5, 1e-5}, "in place");
}

TEST_F(CudaKernelsForward, Softmax) {
  HostTensor rows = randomTensor(DType::F32, {13, 77}, 1, -8.0, 8.0);
  HostTensor middle = randomTensor(DType::F32, {3, 17, 5}, 2, -8.0, 8.0);
  HostTensor scores = randomTensor(DType::F32, {2, 3, 19, 19}, 3, -8.0, 8.0);
  HostTensor wide = randomTensor(DType::F32, {2, 3000}, 4, -8.0, 8.0);
  HostTensor half = randomTensor(DType::BF16, {6, 40}, 5, -8.0, 8.0);
  Tolerance tolerance{1e-7, 1e-5};
  expectMatchesCpu("nn.softmax", {}, {&rows}, {{DType::F32, {13, 77}}},
                   tolerance, "last axis");
  expectMatchesCpu("nn.softmax", makeAttrs({{"axis", int64_t{1}}}), {&middle},
                   {{DType::F32, {3, 17, 5}}}, tolerance, "middle axis");
  expectMatchesCpu("nn.softmax", makeAttrs({{"axis", int64_t{0}}}), {&middle},
                   {{DType::F32, {3, 17, 5}}}, tolerance, "first axis");
  expectMatchesCpu("nn.softmax", makeAttrs({{"causal", true}}), {&scores},
                   {{DType::F32, {2, 3, 19, 19}}}, tolerance, "causal");
  expectMatchesCpu("nn.softmax", {}, {&wide}, {{DType::F32, {2, 3000}}},
                   tolerance, "long rows");
  expectMatchesCpu("nn.softmax", {}, {&half}, {{DType::F32, {6, 40}}},
                   tolerance, "bf16 input");
  expectMatchesCpu("nn.softmax", {}, {&half}, {{DType::BF16, {6, 40}, 0}},
                   tolerance, "bf16 in place");
  expectMatchesCpu("nn.softmax", makeAttrs({{"causal", true}}), {&scores},
                   {{DType::F32, {2, 3, 19, 19}, 0}}, tolerance,
                   "causal in place");
  // Rows of a multiple of 8 up to 1024 elements take the warp-per-row path,
  // causal or not, in place or not; rows of 1032 are past it.
  HostTensor attention =
      randomTensor(DType::BF16, {2, 2, 64, 64}, 6, -8.0, 8.0);
  AttrMap causal = makeAttrs({{"causal", true}});
  expectMatchesCpu("nn.softmax", causal, {&attention},
                   {{DType::BF16, {2, 2, 64, 64}}}, tolerance, "causal rows");
  expectMatchesCpu("nn.softmax", causal, {&attention},
                   {{DType::BF16, {2, 2, 64, 64}, 0}}, tolerance,
                   "causal rows in place");
  for (int64_t size : {8, 1024, 1032}) {
    HostTensor x = randomTensor(DType::F32, {3, size}, 7, -8.0, 8.0);
    expectMatchesCpu("nn.softmax", {}, {&x}, {{DType::F32, {3, size}}},
                     tolerance, "rows of " + std::to_string(size));
    // Causal scores are square.
    HostTensor square = randomTensor(DType::F32, {size, size}, 8, -8.0, 8.0);
    expectMatchesCpu("nn.softmax", causal, {&square},
                     {{DType::F16, {size, size}}}, tolerance,
                     "causal rows of " + std::to_string(size));
  }
}

TEST_F(CudaKernelsForward, Embedding) {
  HostTensor table = randomTensor(DType::F32, {50, 37}, 1);
  HostTensor ids = randomIndices(DType::I64, {3, 7}, 2, 50);
  HostTensor ids32 = randomIndices(DType::I32, {11}, 3, 50);
  expectMatchesCpu("nn.embedding", {}, {&table, &ids},
                   {{DType::F32, {3, 7, 37}}}, exactBits());
  expectMatchesCpu("nn.embedding", {}, {&table, &ids32},
                   {{DType::BF16, {11, 37}}}, exactBits(), "to bf16");
  HostTensor table16 = randomTensor(DType::F16, {50, 37}, 4);
  expectMatchesCpu("nn.embedding", {}, {&table16, &ids},
                   {{DType::F16, {3, 7, 37}}}, exactBits(), "f16");
  expectMatchesCpu("nn.embedding", {}, {&table16, &ids32},
                   {{DType::F32, {11, 37}}}, exactBits(), "f16 to f32");
  HostTensor none(DType::I64, {0});
  expectMatchesCpu("nn.embedding", {}, {&table, &none}, {{DType::F32, {0, 37}}},
                   exactBits(), "no ids");
}

// A (10, 37) table split by rows over two ranks: each looks up its rows and
// gives zeros for the other's ids, as on the CPU.
TEST_F(CudaKernelsForward, EmbeddingOfATableSplitByVocabulary) {
  HostTensor ids = randomIndices(DType::I64, {3, 7}, 2, 10);
  HostTensor ids32 = randomIndices(DType::I32, {11}, 3, 10);
  for (int64_t rank = 0; rank < 2; ++rank) {
    AttrMap attrs = makeAttrs({{"global_shape", ints({10, 37})},
                               {"shard_offsets", ints({5 * rank, 0})}});
    std::string what = "rank " + std::to_string(rank);
    HostTensor table = randomTensor(DType::F32, {5, 37}, 1);
    expectMatchesCpu("nn.embedding", attrs, {&table, &ids},
                     {{DType::F32, {3, 7, 37}}}, exactBits(), what);
    HostTensor table16 = randomTensor(DType::BF16, {5, 37}, 4);
    expectMatchesCpu("nn.embedding", attrs, {&table16, &ids32},
                     {{DType::F32, {11, 37}}}, exactBits(), what + " bf16");
  }
}

TEST_F(CudaKernelsForward, CrossEntropy) {
  Tolerance tolerance{1e-6, 1e-5};
  HostTensor logits = randomTensor(DType::F32, {17, 29}, 1, -5.0, 5.0);
  HostTensor labels = randomIndices(DType::I64, {17}, 2, 29);
  expectMatchesCpu("nn.cross_entropy", {}, {&logits, &labels},
                   {{DType::F32, {}}}, tolerance);
  expectMatchesCpu("nn.cross_entropy", makeAttrs({{"count", int64_t{64}}}),
                   {&logits, &labels}, {{DType::F32, {}}}, tolerance,
                   "global count");
  HostTensor logits3 = randomTensor(DType::BF16, {4, 5, 11}, 3, -5.0, 5.0);
  HostTensor labels3 = randomIndices(DType::I32, {4, 5}, 4, 11);
  expectMatchesCpu("nn.cross_entropy", {}, {&logits3, &labels3},
                   {{DType::F32, {}}}, tolerance, "bf16 rank 3");
  HostTensor many = randomTensor(DType::F32, {8, 5000}, 5, -5.0, 5.0);
  HostTensor manyLabels = randomIndices(DType::I64, {8}, 6, 5000);
  expectMatchesCpu("nn.cross_entropy", {}, {&many, &manyLabels},
                   {{DType::BF16, {1}}}, tolerance, "5000 classes");
  HostTensor batch = randomTensor(DType::F32, {2048, 61}, 7, -5.0, 5.0);
  HostTensor batchLabels = randomIndices(DType::I64, {2048}, 8, 61);
  expectMatchesCpu("nn.cross_entropy", {}, {&batch, &batchLabels},
                   {{DType::F32, {}}}, tolerance, "2048 samples");
}

TEST_F(CudaKernelsForward, Fill) {
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::F64,
                     DType::I64, DType::I32, DType::I1}) {
    for (double value : {-2.5, 0.0, 3.0e5}) {
      expectMatchesCpu("nn.fill", makeAttrs({{"value", value}}), {},
                       {{type, {3, 333}}}, exactBits(),
                       std::string(dtypeName(type)) + " " +
                           std::to_string(value));
    }
  }
}

TEST_F(CudaKernelsForward, ReshapePadTranspose) {
  HostTensor x = randomTensor(DType::F32, {6, 35}, 1);
  expectMatchesCpu("nn.reshape", {}, {&x}, {{DType::F32, {210}}}, exactBits());
  expectMatchesCpu("nn.reshape", {}, {&x}, {{DType::F32, {5, 42}, 0}},
                   exactBits(), "in place");

  HostTensor ids = randomIndices(DType::I64, {3, 5}, 2, 1000);
  HostTensor half = randomTensor(DType::F16, {2, 3, 4}, 3);
  expectMatchesCpu("nn.pad",
                   makeAttrs({{"low", ints({1, 0})}, {"high", ints({2, 3})}}),
                   {&ids}, {{DType::I64, {6, 8}}}, exactBits());
  expectMatchesCpu(
      "nn.pad",
      makeAttrs({{"low", ints({0, 1, 2})}, {"high", ints({1, 0, 3})}}), {&half},
      {{DType::F16, {3, 4, 9}}}, exactBits(), "f16");

  HostTensor cube = randomTensor(DType::F32, {3, 4, 5}, 4);
  for (const std::vector<int64_t> &permutation :
       {ints({2, 0, 1}), ints({1, 0, 2}), ints({0, 2, 1}), ints({0, 1, 2}),
        ints({2, 1, 0})}) {
    Shape shape;
    for (int64_t d : permutation)
      shape.push_back(cube.ref.shape[d]);
    expectMatchesCpu("nn.transpose", makeAttrs({{"permutation", permutation}}),
                     {&cube}, {{DType::F32, shape}}, exactBits());
  }
  HostTensor matrix = randomTensor(DType::BF16, {17, 33}, 5);
  expectMatchesCpu("nn.transpose", makeAttrs({{"permutation", ints({1, 0})}}),
                   {&matrix}, {{DType::BF16, {33, 17}}}, exactBits(), "bf16");
  HostTensor flags = randomIndices(DType::I1, {2, 3, 5, 7}, 6, 2);
  expectMatchesCpu("nn.transpose",
                   makeAttrs({{"permutation", ints({0, 2, 1, 3})}}), {&flags},
                   {{DType::I1, {2, 5, 3, 7}}}, exactBits(), "i1 heads");
  HostTensor squareMatrix = randomTensor(DType::F32, {9, 9}, 7);
  expectMatchesCpu("nn.transpose", makeAttrs({{"permutation", ints({1, 0})}}),
                   {&squareMatrix}, {{DType::F32, {9, 9}, 0}}, exactBits(),
                   "in place");
}

TEST_F(CudaKernelsForward, SliceSplitConcat) {
  HostTensor x = randomTensor(DType::F32, {10, 12}, 1);
  expectMatchesCpu("nn.slice",
                   makeAttrs({{"offsets", ints({1, 2})},
                              {"sizes", ints({4, 5})},
                              {"strides", ints({2, 1})}}),
                   {&x}, {{DType::F32, {4, 5}}}, exactBits());
  expectMatchesCpu(
      "nn.slice",
      makeAttrs({{"offsets", ints({3, 0})}, {"sizes", ints({2, 12})}}), {&x},
      {{DType::F32, {2, 12}}}, exactBits(), "rows");
  expectMatchesCpu(
      "nn.slice",
      makeAttrs({{"offsets", ints({10, 0})}, {"sizes", ints({0, 12})}}), {&x},
      {{DType::F32, {0, 12}}}, exactBits(), "empty");

  HostTensor y = randomIndices(DType::I32, {5, 12}, 2, 100);
  AttrMap split = makeAttrs({{"axis", int64_t{1}}, {"sizes", ints({3, 4, 5})}});
  expectMatchesCpu(
      "nn.split", split, {&y},
      {{DType::I32, {5, 3}}, {DType::I32, {5, 4}}, {DType::I32, {5, 5}}},
      exactBits());
  // The first part in the input's own bytes: later parts must still read
  // the input as it was.
  expectMatchesCpu(
      "nn.split", split, {&y},
      {{DType::I32, {5, 3}, 0}, {DType::I32, {5, 4}}, {DType::I32, {5, 5}}},
      exactBits(), "in place");
  expectMatchesCpu(
      "nn.split", makeAttrs({{"axis", int64_t{0}}, {"sizes", ints({2, 0, 3})}}),
      {&y},
      {{DType::I32, {2, 12}}, {DType::I32, {0, 12}}, {DType::I32, {3, 12}}},
      exactBits(), "axis 0");

  HostTensor a = randomTensor(DType::BF16, {2, 3}, 3);
  HostTensor b = randomTensor(DType::BF16, {2, 5}, 4);
  HostTensor c = randomTensor(DType::BF16, {2, 1}, 5);
  expectMatchesCpu("nn.concat", makeAttrs({{"axis", int64_t{1}}}), {&a, &b, &c},
                   {{DType::BF16, {2, 9}}}, exactBits());
  HostTensor d = randomTensor(DType::F64, {3, 4}, 6);
  HostTensor e = randomTensor(DType::F64, {1, 4}, 7);
  expectMatchesCpu("nn.concat", makeAttrs({{"axis", int64_t{-2}}}), {&d, &e},
                   {{DType::F64, {4, 4}}}, exactBits(), "axis 0");
}

TEST_F(CudaKernelsForward, Reductions) {
  Tolerance tolerance{1e-6, 1e-6};
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    bool keepdim;
    Shape out;
  };
  const Case cases[] = {
      {{37, 65}, {0}, false, {65}},    {{37, 65}, {1}, false, {37}},
      {{37, 65}, {-1}, true, {37, 1}}, {{3, 4, 5}, {0, 2}, true, {1, 4, 1}},
      {{3, 4, 5}, {1}, false, {3, 5}}, {{3, 4, 5}, {}, false, {3, 4, 5}},
      {{300, 200}, {0, 1}, false, {}}, {{4, 5000, 3}, {1}, false, {4, 3}},
      {{2, 1, 3}, {1}, false, {2, 3}}, {{}, {}, false, {}},
  };
  unsigned seed = 1;
  for (const char *op : {"nn.reduce_sum", "nn.reduce_mean"}) {
    for (const Case &c : cases) {
      HostTensor x = randomTensor(DType::F32, c.shape, seed++);
      AttrMap attrs = makeAttrs({{"axes", c.axes}, {"keepdim", c.keepdim}});
      expectMatchesCpu(op, attrs, {&x}, {{DType::F32, c.out}}, tolerance,
                       "shape " + std::to_string(c.shape.size()) + "-D");
    }
  }
  HostTensor x = randomTensor(DType::BF16, {64, 96}, 50);
  expectMatchesCpu("nn.reduce_mean",
                   makeAttrs({{"axes", ints({0})}, {"count", int64_t{256}}}),
                   {&x}, {{DType::F32, {96}}}, tolerance, "global count");
  expectMatchesCpu("nn.reduce_sum", makeAttrs({{"axes", ints({1})}}), {&x},
                   {{DType::BF16, {64}}}, tolerance, "bf16");
  HostTensor empty(DType::F32, {0, 4});
  expectMatchesCpu("nn.reduce_sum", makeAttrs({{"axes", ints({0})}}), {&empty},
                   {{DType::F32, {4}}}, exactBits(), "empty sum");
  expectMatchesCpu("nn.reduce_mean", makeAttrs({{"axes", ints({0})}}), {&empty},
                   {{DType::F32, {4}}}, {}, "empty mean (NaN)");
}

TEST_F(CudaKernelsForward, NonfiniteCount) {
  std::vector<double> values(1000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>(i) - 500.0;
  values[3] = NAN;
  values[500] = INFINITY;
  values[999] = -INFINITY;
  values[10] = 1e6; // Finite in f32, infinite in f16.
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    HostTensor x = makeTensor(type, {10, 100}, values);
    expectMatchesCpu("nn.nonfinite_count", {}, {&x}, {{DType::F32, {}}},
                     exactBits(), dtypeName(type));
  }
  HostTensor clean = randomTensor(DType::F32, {70000}, 1);
  expectMatchesCpu("nn.nonfinite_count", {}, {&clean}, {{DType::BF16, {1}}},
                   exactBits(), "none");
}

} // namespace
} // namespace zerosbp::runtime::gputest

//===- NNOps.cpp - nn op verification and result type inference -----------===//

#include "dialects/nn/IR/NNOps.h"

#include "runtime/kernels/BlockQuantize.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::nn;

//===----------------------------------------------------------------------===//
// Custom assembly: `nn.variable "w" param init = normal(0.02)`
//===----------------------------------------------------------------------===//

/// The shortest decimal form that reads back as `value` (`0.999`, `1e-05`),
/// for messages and the variable's init scale.
static std::string formatNumber(double value) {
  std::string text;
  for (int precision = 6; precision <= 17; ++precision) {
    text = llvm::formatv("{0}", llvm::format("%.*g", precision, value)).str();
    if (std::strtod(text.c_str(), nullptr) == value)
      break;
  }
  return text;
}

static ParseResult parseRole(OpAsmParser &parser, sbp::RoleAttr &role) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<sbp::Role> parsed = sbp::symbolizeRole(keyword);
  if (!parsed)
    return parser.emitError(loc, "unknown role '")
           << keyword
           << "' (expected param, grad, master, opt_state, activation or "
              "input)";
  role = sbp::RoleAttr::get(parser.getContext(), *parsed);
  return success();
}

static void printRole(OpAsmPrinter &printer, Operation *, sbp::RoleAttr role) {
  printer << sbp::stringifyRole(role.getValue());
}

static ParseResult parseRoleAndInit(OpAsmParser &parser, sbp::RoleAttr &role,
                                    InitializerAttr &init, FloatAttr &scale) {
  if (parseRole(parser, role))
    return failure();
  if (failed(parser.parseOptionalKeyword("init")))
    return success();
  SMLoc loc;
  StringRef keyword;
  if (parser.parseEqual() ||
      (loc = parser.getCurrentLocation(), parser.parseKeyword(&keyword)))
    return failure();
  std::optional<Initializer> parsed = symbolizeInitializer(keyword);
  if (!parsed)
    return parser.emitError(loc, "unknown initializer '")
           << keyword
           << "' (expected zeros, ones, normal, uniform or constant)";
  init = InitializerAttr::get(parser.getContext(), *parsed);
  if (succeeded(parser.parseOptionalLParen())) {
    double value;
    if (parser.parseFloat(value) || parser.parseRParen())
      return failure();
    scale = parser.getBuilder().getF64FloatAttr(value);
  }
  return success();
}

static void printRoleAndInit(OpAsmPrinter &printer, Operation *op,
                             sbp::RoleAttr role, InitializerAttr init,
                             FloatAttr scale) {
  printRole(printer, op, role);
  bool hasScale = scale && !scale.getValue().isZero();
  if ((!init || init.getValue() == Initializer::zeros) && !hasScale)
    return;
  printer << " init = "
          << stringifyInitializer(init ? init.getValue() : Initializer::zeros);
  if (hasScale) {
    std::string text = formatNumber(scale.getValueAsDouble());
    // The parser reads a float literal, which needs a '.': `1` -> `1.0`,
    // `1e+20` -> `1.0e+20`.
    if (StringRef(text).find_first_of(".ni") == StringRef::npos) {
      size_t exponent = StringRef(text).find_first_of("eE");
      text.insert(exponent == StringRef::npos ? text.size() : exponent, ".0");
    }
    printer << "(" << text << ")";
  }
}

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.cpp.inc"

bool mlir::nn::isCompatibleIgnoringSbp(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip(lhs, rhs)) {
    auto lt = dyn_cast<RankedTensorType>(l);
    auto rt = dyn_cast<RankedTensorType>(r);
    if (!lt || !rt) {
      if (l != r)
        return false;
      continue;
    }
    if (lt.getShape() != rt.getShape() ||
        lt.getElementType() != rt.getElementType())
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {
/// Emits inference errors against the op's location, named like verifier
/// errors so both read the same.
class Inference {
public:
  Inference(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  LogicalResult error(const Twine &message) const {
    return emitOptionalError(loc, "'nn.", opName, "' op ", message);
  }

  LogicalResult sameElementType(RankedTensorType a, RankedTensorType b,
                                StringRef aName, StringRef bName) const {
    if (a.getElementType() == b.getElementType())
      return success();
    return emitOptionalError(loc, "'nn.", opName, "' op ", aName, " and ",
                             bName, " have different element types (",
                             a.getElementType(), " vs ", b.getElementType(),
                             ")");
  }

  LogicalResult sameShape(RankedTensorType a, RankedTensorType b,
                          StringRef aName, StringRef bName) const {
    if (a.getShape() == b.getShape())
      return success();
    return emitOptionalError(loc, "'nn.", opName, "' op ", aName, " shape ",
                             shapeStr(a.getShape()), " does not match ", bName,
                             " shape ", shapeStr(b.getShape()));
  }

  static std::string shapeStr(ArrayRef<int64_t> shape) {
    std::string s = "[";
    llvm::raw_string_ostream os(s);
    llvm::interleaveComma(shape, os);
    os << "]";
    return s;
  }

private:
  std::optional<Location> loc;
  StringRef opName;
};
} // namespace

static RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static RankedTensorType plain(ArrayRef<int64_t> shape, Type elementType) {
  return RankedTensorType::get(shape, elementType);
}

/// The optional element count a mean divides by (`count` of cross_entropy,
/// cross_entropy_grad and reduce_mean) is positive.
static LogicalResult checkCount(const Inference &infer,
                                std::optional<uint64_t> count) {
  // I64Attr reads back as uint64_t; a negative count shows as signed.
  if (count && static_cast<int64_t>(*count) < 1)
    return infer.error("count must be positive, got " +
                       Twine(static_cast<int64_t>(*count)));
  return success();
}

/// Normalizes a possibly negative axis; fails when out of range.
static FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return failure();
  return axis;
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

/// True when no op of kind OpTy precedes `op` in its block. Checks that
/// span a whole graph run once, from its first op of a kind, so verifying a
/// graph stays linear in its size.
template <typename... OpTy> static bool isFirstOfKind(Operation *op) {
  for (Operation *it = op->getPrevNode(); it; it = it->getPrevNode())
    if (isa<OpTy...>(it))
      return false;
  return true;
}

/// Names of variables and inputs are keys for data, checkpoints and
/// partition plans; a repeat is an error. Checked once per graph, from the
/// first op of the kind.
template <typename OpTy> static LogicalResult verifyUniqueName(OpTy op) {
  if (op.getName().empty())
    return op.emitOpError("needs a non-empty name");
  if (!isFirstOfKind<OpTy>(op))
    return success();
  llvm::StringSet<> names;
  for (Operation *it = op; it; it = it->getNextNode()) {
    auto other = dyn_cast<OpTy>(it);
    if (other && !names.insert(other.getName()).second)
      return other.emitOpError("name '")
             << other.getName() << "' is already used in this graph";
  }
  return success();
}

LogicalResult VariableOp::verify() {
  using sbp::Role;
  Role role = getRole();
  if (role == Role::activation || role == Role::input)
    return emitOpError("role '")
           << sbp::stringifyRole(role)
           << "' is not a variable role (param, grad, master, opt_state)";
  if (auto encoding = sbp::getGlobalEncoding(getResult().getType()))
    if (encoding.getRole() != role)
      return emitOpError("role '")
             << sbp::stringifyRole(role) << "' differs from the result's '"
             << sbp::stringifyRole(encoding.getRole()) << "'";
  if (std::optional<ArrayRef<int64_t>> split = getModelSplit()) {
    std::optional<ArrayRef<int64_t>> logical = getLogicalShape();
    auto type = cast<RankedTensorType>(getResult().getType());
    if (split->size() != 2 || !logical || type.getRank() != 2 ||
        (*split)[1] < 0 || (*split)[1] >= (int64_t)logical->size())
      return emitOpError("model_split must be [axis, dim] with dim a dim of "
                         "logical_shape, on a 2-D (parts, n) result");
    int64_t parts = type.getDimSize(0);
    if (parts < 1 || (*logical)[(*split)[1]] % parts != 0)
      return emitOpError("model_split: dim ")
             << (*split)[1] << " of logical_shape does not divide into "
             << parts << " parts";
    if (auto encoding = sbp::getGlobalEncoding(type)) {
      int64_t axis = (*split)[0];
      if (axis < 0 || axis >= (int64_t)encoding.getSbp().size() ||
          encoding.getSbp()[axis] != sbp::SbpAttr::getSplit(getContext(), 0) ||
          encoding.getPlacement().getHierarchyShape()[axis] != parts)
        return emitOpError("model_split: hierarchy axis ")
               << axis << " must split dim 0 of the result into its " << parts
               << " rows";
    }
  }
  double scale = getInitScale().convertToDouble();
  if (!(scale >= 0) || std::isinf(scale))
    return emitOpError("init_scale must be finite and non-negative, got ")
           << formatNumber(scale);
  return verifyUniqueName(*this);
}

/// `nn.gradient` and `nn.assign` name a variable of the graph and carry a
/// value of its type. Checked once per graph, from the first such op, against
/// one map of the graph's variables.
static LogicalResult verifyVariableEffects(Operation *first) {
  if (!isFirstOfKind<GradientOp, AssignOp>(first))
    return success();
  Block *block = first->getBlock();
  llvm::StringMap<VariableOp> variables;
  for (VariableOp variable : block->getOps<VariableOp>())
    variables.try_emplace(variable.getName(), variable);
  for (Operation &op : *block) {
    StringRef name;
    Value value;
    bool needsParam = false;
    if (auto gradient = dyn_cast<GradientOp>(op)) {
      name = gradient.getName();
      value = gradient.getValue();
      needsParam = true;
    } else if (auto assign = dyn_cast<AssignOp>(op)) {
      name = assign.getName();
      value = assign.getValue();
    } else {
      continue;
    }
    VariableOp variable = variables.lookup(name);
    if (!variable)
      return op.emitOpError("names no variable '") << name << "'";
    if (needsParam && variable.getRole() != sbp::Role::param)
      return op.emitOpError("variable '")
             << name << "' is a " << sbp::stringifyRole(variable.getRole())
             << ", not a param";
    RankedTensorType expected = variable.getResult().getType();
    auto actual = cast<RankedTensorType>(value.getType());
    if (expected.getShape() != actual.getShape() ||
        expected.getElementType() != actual.getElementType())
      return op.emitOpError("value type ")
             << actual << " does not match variable '" << name << "' of type "
             << expected;
  }
  return success();
}

LogicalResult GradientOp::verify() { return verifyVariableEffects(*this); }

LogicalResult AssignOp::verify() { return verifyVariableEffects(*this); }

LogicalResult InputOp::verify() {
  if (auto encoding = sbp::getGlobalEncoding(getResult().getType()))
    if (encoding.getRole() != sbp::Role::input)
      return emitOpError("result role must be 'input', got '")
             << sbp::stringifyRole(encoding.getRole()) << "'";
  return verifyUniqueName(*this);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// Shared by matmul and the matmul epilogue ops: op(a) op(b) of two 2-D
/// operands of one element type.
static FailureOr<RankedTensorType> inferMatmul2D(const Inference &infer,
                                                 RankedTensorType a,
                                                 RankedTensorType b, bool ta,
                                                 bool tb) {
  if (a.getRank() != 2 || b.getRank() != 2) {
    (void)infer.error("operands must be 2-D, got ranks " + Twine(a.getRank()) +
                      " and " + Twine(b.getRank()));
    return failure();
  }
  if (failed(infer.sameElementType(a, b, "lhs", "rhs")))
    return failure();
  int64_t m = a.getDimSize(ta ? 1 : 0), ka = a.getDimSize(ta ? 0 : 1);
  int64_t kb = b.getDimSize(tb ? 1 : 0), n = b.getDimSize(tb ? 0 : 1);
  if (ka != kb) {
    (void)infer.error("contracting dims differ: lhs has " + Twine(ka) +
                      ", rhs has " + Twine(kb));
    return failure();
  }
  return plain({m, n}, a.getElementType());
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> type =
      inferMatmul2D(Inference(loc, "matmul"), tensorOf(adaptor.getLhs()),
                    tensorOf(adaptor.getRhs()), adaptor.getTransposeLhs(),
                    adaptor.getTransposeRhs());
  if (failed(type))
    return failure();
  types.push_back(*type);
  return success();
}

/// Shared by the matmul epilogue ops: the product, and a bias of its element
/// type along the result's last dim.
static FailureOr<RankedTensorType> inferMatmulEpilogue(const Inference &infer,
                                                       RankedTensorType a,
                                                       RankedTensorType b,
                                                       RankedTensorType bias,
                                                       bool ta, bool tb) {
  FailureOr<RankedTensorType> product = inferMatmul2D(infer, a, b, ta, tb);
  if (failed(product) || failed(infer.sameElementType(a, bias, "lhs", "bias")))
    return failure();
  int64_t n = product->getDimSize(1);
  if (bias.getRank() != 1 || bias.getDimSize(0) != n) {
    (void)infer.error("bias must be 1-D of the result's last dim " + Twine(n) +
                      ", got " + Inference::shapeStr(bias.getShape()));
    return failure();
  }
  return product;
}

LogicalResult MatmulBiasOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> type = inferMatmulEpilogue(
      Inference(loc, "matmul_bias"), tensorOf(adaptor.getLhs()),
      tensorOf(adaptor.getRhs()), tensorOf(adaptor.getBias()),
      adaptor.getTransposeLhs(), adaptor.getTransposeRhs());
  if (failed(type))
    return failure();
  types.push_back(*type);
  return success();
}

LogicalResult MatmulBiasGeluOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> type = inferMatmulEpilogue(
      Inference(loc, "matmul_bias_gelu"), tensorOf(adaptor.getLhs()),
      tensorOf(adaptor.getRhs()), tensorOf(adaptor.getBias()),
      adaptor.getTransposeLhs(), adaptor.getTransposeRhs());
  if (failed(type))
    return failure();
  types.append({*type, *type});
  return success();
}

LogicalResult MatmulAddOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(loc, "matmul_add");
  RankedTensorType addend = tensorOf(adaptor.getAddend());
  FailureOr<RankedTensorType> product = inferMatmul2D(
      infer, tensorOf(adaptor.getLhs()), tensorOf(adaptor.getRhs()),
      adaptor.getTransposeLhs(), adaptor.getTransposeRhs());
  if (failed(product) ||
      failed(infer.sameElementType(tensorOf(adaptor.getLhs()), addend, "lhs",
                                   "addend")))
    return failure();
  if (addend.getShape() != product->getShape()) {
    (void)infer.error("addend must have the product's shape " +
                      Inference::shapeStr(product->getShape()) + ", got " +
                      Inference::shapeStr(addend.getShape()));
    return failure();
  }
  types.push_back(*product);
  return success();
}

LogicalResult BatchMatmulOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Inference infer(loc, "batch_matmul");
  RankedTensorType a = tensorOf(adaptor.getLhs());
  RankedTensorType b = tensorOf(adaptor.getRhs());
  int64_t rank = a.getRank();
  if (rank < 3 || b.getRank() != rank)
    return infer.error("operands must have the same rank of at least 3, got " +
                       Twine(a.getRank()) + " and " + Twine(b.getRank()));
  if (failed(infer.sameElementType(a, b, "lhs", "rhs")))
    return failure();
  if (a.getShape().drop_back(2) != b.getShape().drop_back(2))
    return infer.error(
        "batch dims differ: " + Inference::shapeStr(a.getShape().drop_back(2)) +
        " vs " + Inference::shapeStr(b.getShape().drop_back(2)));
  bool ta = adaptor.getTransposeLhs(), tb = adaptor.getTransposeRhs();
  int64_t m = a.getDimSize(rank - (ta ? 1 : 2));
  int64_t ka = a.getDimSize(rank - (ta ? 2 : 1));
  int64_t kb = b.getDimSize(rank - (tb ? 1 : 2));
  int64_t n = b.getDimSize(rank - (tb ? 2 : 1));
  if (ka != kb)
    return infer.error("contracting dims differ: lhs has " + Twine(ka) +
                       ", rhs has " + Twine(kb));
  SmallVector<int64_t> shape(a.getShape().drop_back(2));
  shape.append({m, n});
  types.push_back(plain(shape, a.getElementType()));
  return success();
}

/// Shared by attention and attention_grad: q, k and v have one element type
/// and the same batch dims, q and k the same head dim, k and v the same key
/// count; a causal mask needs as many queries as keys; the scale is finite.
static LogicalResult checkAttention(const Inference &infer, RankedTensorType q,
                                    RankedTensorType k, RankedTensorType v,
                                    double scale, bool causal) {
  int64_t rank = q.getRank();
  if (rank < 3 || k.getRank() != rank || v.getRank() != rank)
    return infer.error("q, k and v must have the same rank of at least 3, "
                       "got " +
                       Twine(rank) + ", " + Twine(k.getRank()) + " and " +
                       Twine(v.getRank()));
  if (failed(infer.sameElementType(q, k, "q", "k")) ||
      failed(infer.sameElementType(q, v, "q", "v")))
    return failure();
  ArrayRef<int64_t> batch = q.getShape().drop_back(2);
  if (k.getShape().drop_back(2) != batch || v.getShape().drop_back(2) != batch)
    return infer.error("batch dims differ: q " + Inference::shapeStr(batch) +
                       ", k " + Inference::shapeStr(k.getShape().drop_back(2)) +
                       ", v " + Inference::shapeStr(v.getShape().drop_back(2)));
  if (q.getDimSize(rank - 1) != k.getDimSize(rank - 1))
    return infer.error(
        "q and k head dims differ: " + Twine(q.getDimSize(rank - 1)) + " vs " +
        Twine(k.getDimSize(rank - 1)));
  if (k.getDimSize(rank - 2) != v.getDimSize(rank - 2))
    return infer.error(
        "k and v key counts differ: " + Twine(k.getDimSize(rank - 2)) + " vs " +
        Twine(v.getDimSize(rank - 2)));
  if (causal && q.getDimSize(rank - 2) != k.getDimSize(rank - 2))
    return infer.error("a causal attention needs as many queries as keys, "
                       "got " +
                       Twine(q.getDimSize(rank - 2)) + " and " +
                       Twine(k.getDimSize(rank - 2)));
  if (!std::isfinite(scale))
    return infer.error("scale must be finite");
  return success();
}

/// The attention result: q's rows with v's width, and the f32 log-sum-exp
/// of each row.
static void attentionResultTypes(RankedTensorType q, RankedTensorType v,
                                 SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  types.push_back(plain(shape, q.getElementType()));
  types.push_back(
      plain(q.getShape().drop_back(), Float32Type::get(q.getContext())));
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(loc, "attention");
  RankedTensorType q = tensorOf(adaptor.getQ());
  RankedTensorType v = tensorOf(adaptor.getV());
  if (failed(checkAttention(infer, q, tensorOf(adaptor.getK()), v,
                            adaptor.getScale().convertToDouble(),
                            adaptor.getCausal())))
    return failure();
  attentionResultTypes(q, v, types);
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Inference infer(loc, "attention_grad");
  RankedTensorType q = tensorOf(adaptor.getQ());
  RankedTensorType k = tensorOf(adaptor.getK());
  RankedTensorType v = tensorOf(adaptor.getV());
  if (failed(checkAttention(infer, q, k, v,
                            adaptor.getScale().convertToDouble(),
                            adaptor.getCausal())))
    return failure();
  SmallVector<Type> forward;
  attentionResultTypes(q, v, forward);
  auto out = cast<RankedTensorType>(forward[0]);
  RankedTensorType dy = tensorOf(adaptor.getGradOutput());
  RankedTensorType result = tensorOf(adaptor.getResult());
  RankedTensorType lse = tensorOf(adaptor.getLse());
  if (failed(infer.sameElementType(dy, out, "grad_output", "q")) ||
      failed(infer.sameShape(dy, out, "grad_output", "result of attention")) ||
      failed(infer.sameElementType(result, out, "result", "q")) ||
      failed(infer.sameShape(result, out, "result", "result of attention")) ||
      failed(infer.sameShape(lse, cast<RankedTensorType>(forward[1]), "lse",
                             "lse of attention")))
    return failure();
  types.append({plain(q.getShape(), q.getElementType()),
                plain(k.getShape(), k.getElementType()),
                plain(v.getShape(), v.getElementType())});
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBroadcast(StringRef opName,
                                    std::optional<Location> loc, Value lhs,
                                    Value rhs, SmallVectorImpl<Type> &types) {
  Inference infer(loc, opName);
  RankedTensorType a = tensorOf(lhs), b = tensorOf(rhs);
  if (failed(infer.sameElementType(a, b, "lhs", "rhs")))
    return failure();
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(a.getShape(), b.getShape(), shape))
    return infer.error("shapes " + Inference::shapeStr(a.getShape()) + " and " +
                       Inference::shapeStr(b.getShape()) + " do not broadcast");
  types.push_back(plain(shape, a.getElementType()));
  return success();
}

#define NN_BROADCAST_INFERENCE(OP, NAME)                                       \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &types) {                                          \
    return inferBroadcast(NAME, loc, adaptor.getLhs(), adaptor.getRhs(),       \
                          types);                                              \
  }
NN_BROADCAST_INFERENCE(AddOp, "add")
NN_BROADCAST_INFERENCE(SubOp, "sub")
NN_BROADCAST_INFERENCE(MulOp, "mul")
NN_BROADCAST_INFERENCE(DivOp, "div")
#undef NN_BROADCAST_INFERENCE

#define NN_SAME_TYPE_INFERENCE(OP)                                             \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location>,   \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    RankedTensorType input = tensorOf(adaptor.getInput());                     \
    types.push_back(plain(input.getShape(), input.getElementType()));          \
    return success();                                                          \
  }
NN_SAME_TYPE_INFERENCE(ReluOp)
NN_SAME_TYPE_INFERENCE(GeluOp)
NN_SAME_TYPE_INFERENCE(TanhOp)
NN_SAME_TYPE_INFERENCE(ScaleOp)
#undef NN_SAME_TYPE_INFERENCE

LogicalResult BiasAddOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Inference infer(loc, "bias_add");
  RankedTensorType x = tensorOf(adaptor.getInput());
  RankedTensorType bias = tensorOf(adaptor.getBias());
  if (failed(infer.sameElementType(x, bias, "input", "bias")))
    return failure();
  if (x.getRank() < 1 || bias.getRank() != 1 ||
      bias.getDimSize(0) != x.getShape().back())
    return infer.error("bias shape " + Inference::shapeStr(bias.getShape()) +
                       " must be [last dim of input " +
                       Inference::shapeStr(x.getShape()) + "]");
  types.push_back(plain(x.getShape(), x.getElementType()));
  return success();
}

/// The counter of docs/compiler.md "Dropout" holds the element index in 48
/// bits, the micro-batch in 16 and the stream in 32.
LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Inference infer(loc, "dropout");
  RankedTensorType x = tensorOf(adaptor.getInput());
  double p = adaptor.getP().convertToDouble();
  if (!(p >= 0 && p < 1))
    return infer.error("p must lie in [0, 1), got " + formatNumber(p));
  auto stream = static_cast<int64_t>(adaptor.getStream());
  if (stream < 0 || stream > 0xffffffffLL)
    return infer.error("stream must lie in [0, 2^32), got " + Twine(stream));
  if (std::optional<uint64_t> micro = adaptor.getMicroBatch())
    if (static_cast<int64_t>(*micro) < 0 || *micro > 0xffff)
      return infer.error("micro_batch must lie in [0, 2^16), got " +
                         Twine(static_cast<int64_t>(*micro)));
  ArrayRef<int64_t> global = x.getShape();
  if (std::optional<ArrayRef<int64_t>> shape = adaptor.getGlobalShape()) {
    if (static_cast<int64_t>(shape->size()) != x.getRank())
      return infer.error("global_shape " + Inference::shapeStr(*shape) +
                         " does not have the input's rank");
    global = *shape;
  }
  int64_t numel = 1;
  for (int64_t dim : global) {
    std::optional<int64_t> product =
        dim < 0 ? std::nullopt : llvm::checkedMul(numel, dim);
    if (!product || *product >= (int64_t(1) << 48))
      return infer.error("the global shape " + Inference::shapeStr(global) +
                         " must hold fewer than 2^48 elements");
    numel = *product;
  }
  if (std::optional<ArrayRef<int64_t>> dims = adaptor.getSplitDims())
    for (int64_t dim : *dims)
      if (dim < -1 || dim >= x.getRank())
        return infer.error("split_dims entry " + Twine(dim) +
                           " is neither -1 nor a dim of the input");
  types.push_back(plain(x.getShape(), x.getElementType()));
  return success();
}

LogicalResult CastOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  if (input.getShape() != result.getShape())
    return emitOpError("changes the shape from ") << input << " to " << result;
  // A placement change is reported by SbpOpInterface's verifier.
  return success();
}

/// The block size and bit width of nn.quantize / nn.dequantize, checked;
/// the element count's codes (bytes) and blocks.
static FailureOr<std::pair<int64_t, int64_t>>
quantizedSizes(const Inference &infer, int64_t blockSize, int64_t bits,
               int64_t count) {
  if (std::string error = zerosbp::runtime::quant::layoutError(blockSize, bits);
      !error.empty())
    return infer.error(error);
  return std::make_pair(zerosbp::runtime::quant::codeBytes(count, bits),
                        zerosbp::runtime::quant::blockCount(count, blockSize));
}

LogicalResult QuantizeOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  Inference infer(loc, "quantize");
  RankedTensorType x = tensorOf(adaptor.getInput());
  FailureOr<std::pair<int64_t, int64_t>> sizes = quantizedSizes(
      infer, static_cast<int64_t>(adaptor.getBlockSize()),
      static_cast<int64_t>(adaptor.getBits()), x.getNumElements());
  if (failed(sizes))
    return failure();
  types.push_back(plain({sizes->first}, IntegerType::get(ctx, 8)));
  types.push_back(plain({sizes->second}, Float32Type::get(ctx)));
  return success();
}

LogicalResult DequantizeOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  Inference infer(loc, "dequantize");
  Type dtype = adaptor.getDtype();
  if (!dtype.isF32() && !dtype.isF16() && !dtype.isBF16())
    return infer.error("dtype must be f32, f16 or bf16");
  ArrayRef<int64_t> shape = adaptor.getShape();
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return infer.error("shape has a negative dim");
    count *= dim;
  }
  FailureOr<std::pair<int64_t, int64_t>> sizes =
      quantizedSizes(infer, static_cast<int64_t>(adaptor.getBlockSize()),
                     static_cast<int64_t>(adaptor.getBits()), count);
  if (failed(sizes))
    return failure();
  int64_t codes = tensorOf(adaptor.getCodes()).getNumElements();
  int64_t scales = tensorOf(adaptor.getScales()).getNumElements();
  if (codes != sizes->first || scales != sizes->second)
    return infer.error("codes and scales of " + Twine(codes) + " and " +
                       Twine(scales) + " elements are not those of " +
                       Twine(count) + " elements (" + Twine(sizes->first) +
                       " and " + Twine(sizes->second) + ")");
  types.push_back(plain(shape, dtype));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, loss
//===----------------------------------------------------------------------===//

/// Checks `param` is 1-D with the last dim of `input`.
static LogicalResult checkLastDimParam(const Inference &infer,
                                       RankedTensorType input,
                                       RankedTensorType param, StringRef name) {
  if (failed(infer.sameElementType(input, param, "input", name)))
    return failure();
  if (input.getRank() < 1 || param.getRank() != 1 ||
      param.getDimSize(0) != input.getShape().back())
    return infer.error(Twine(name) + " shape " +
                       Inference::shapeStr(param.getShape()) +
                       " must be [last dim of input " +
                       Inference::shapeStr(input.getShape()) + "]");
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(loc, "layer_norm");
  RankedTensorType x = tensorOf(adaptor.getInput());
  if (failed(
          checkLastDimParam(infer, x, tensorOf(adaptor.getGamma()), "gamma")) ||
      failed(checkLastDimParam(infer, x, tensorOf(adaptor.getBeta()), "beta")))
    return failure();
  if (!(adaptor.getEpsilon().convertToDouble() > 0))
    return infer.error("epsilon must be positive");
  types.push_back(plain(x.getShape(), x.getElementType()));
  return success();
}

/// Shared by softmax and softmax_grad: the axis and the causal mask's needs.
static FailureOr<int64_t> checkSoftmaxAxis(const Inference &infer,
                                           RankedTensorType x, int64_t axis,
                                           bool causal) {
  FailureOr<int64_t> normalized = normalizeAxis(axis, x.getRank());
  if (failed(normalized)) {
    (void)infer.error("axis " + Twine(axis) + " is out of range for rank " +
                      Twine(x.getRank()));
    return failure();
  }
  if (causal) {
    int64_t rank = x.getRank();
    if (rank < 2 || *normalized != rank - 1 ||
        x.getDimSize(rank - 1) != x.getDimSize(rank - 2)) {
      (void)infer.error("a causal softmax runs over the last axis of a "
                        "tensor whose last two dims are equal, got " +
                        Inference::shapeStr(x.getShape()));
      return failure();
    }
  }
  return normalized;
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Inference infer(loc, "softmax");
  RankedTensorType x = tensorOf(adaptor.getInput());
  if (failed(
          checkSoftmaxAxis(infer, x, adaptor.getAxis(), adaptor.getCausal())))
    return failure();
  types.push_back(plain(x.getShape(), x.getElementType()));
  return success();
}

int64_t SoftmaxOp::getNormalizedAxis() {
  int64_t axis = getAxis();
  return axis < 0 ? axis + getInput().getType().getRank() : axis;
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(loc, "embedding");
  RankedTensorType table = tensorOf(adaptor.getTable());
  RankedTensorType ids = tensorOf(adaptor.getIds());
  if (table.getRank() != 2)
    return infer.error("table must be 2-D (vocab, dim), got " +
                       Inference::shapeStr(table.getShape()));
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  types.push_back(plain(shape, table.getElementType()));
  return success();
}

/// Logits `(..., classes)`: a batch and a class axis.
static LogicalResult checkLogits(const Inference &infer,
                                 RankedTensorType logits) {
  if (logits.getRank() < 2)
    return infer.error("logits must have a batch and a class axis, got " +
                       Inference::shapeStr(logits.getShape()));
  return success();
}

/// A per-row value of logits `(..., classes)` (labels, a row's max): the
/// leading dims.
static LogicalResult checkRows(const Inference &infer, StringRef name,
                               RankedTensorType value,
                               RankedTensorType logits) {
  if (value.getShape() != logits.getShape().drop_back())
    return infer.error(name + " shape " +
                       Inference::shapeStr(value.getShape()) +
                       " must be the logits shape without its class axis " +
                       Inference::shapeStr(logits.getShape().drop_back()));
  return success();
}

/// Logits `(..., classes)` with labels of the leading dims.
static LogicalResult checkLogitsLabels(const Inference &infer,
                                       RankedTensorType logits,
                                       RankedTensorType labels) {
  if (failed(checkLogits(infer, logits)))
    return failure();
  return checkRows(infer, "labels", labels, logits);
}

/// A loss's gradient: a 0-D f32 tensor, the loss's type.
static LogicalResult checkGradLoss(const Inference &infer,
                                   RankedTensorType dloss) {
  if (dloss.getRank() == 0 && dloss.getElementType().isF32())
    return success();
  std::string type;
  llvm::raw_string_ostream os(type);
  os << dloss;
  return infer.error("grad_loss must be a 0-D f32 tensor (the loss's "
                     "type), got " +
                     Twine(type));
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  Inference infer(loc, "cross_entropy");
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  if (failed(checkLogitsLabels(infer, logits, tensorOf(adaptor.getLabels()))) ||
      failed(checkCount(infer, adaptor.getCount())))
    return failure();
  // The loss is computed and returned in f32 whatever the logits' precision,
  // as autocast's cross-entropy, with no f32 copy of the logits.
  types.push_back(plain({}, Float32Type::get(logits.getContext())));
  return success();
}

LogicalResult
CrossEntropyMaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  Inference infer(loc, "cross_entropy_max");
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  if (failed(checkLogits(infer, logits)))
    return failure();
  types.push_back(plain(logits.getShape().drop_back(),
                        Float32Type::get(logits.getContext())));
  return success();
}

LogicalResult
CrossEntropySumsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  Inference infer(loc, "cross_entropy_sums");
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  if (failed(checkLogitsLabels(infer, logits, tensorOf(adaptor.getLabels()))) ||
      failed(checkRows(infer, "max", tensorOf(adaptor.getMax()), logits)))
    return failure();
  Type rows = plain(logits.getShape().drop_back(),
                    Float32Type::get(logits.getContext()));
  types.append({rows, rows});
  return success();
}

LogicalResult
CrossEntropyLossOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  Inference infer(loc, "cross_entropy_loss");
  RankedTensorType max = tensorOf(adaptor.getMax());
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"sumexp", adaptor.getSumexp()},
        {"label_logit", adaptor.getLabelLogit()}})
    if (tensorOf(value).getShape() != max.getShape())
      return infer.error(
          name + " shape " + Inference::shapeStr(tensorOf(value).getShape()) +
          " must be max's " + Inference::shapeStr(max.getShape()));
  if (failed(checkCount(infer, adaptor.getCount())))
    return failure();
  types.push_back(plain({}, Float32Type::get(max.getContext())));
  return success();
}

LogicalResult CrossEntropySplitGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  Inference infer(loc, "cross_entropy_split_grad");
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  if (failed(checkGradLoss(infer, tensorOf(adaptor.getGradLoss()))) ||
      failed(checkLogitsLabels(infer, logits, tensorOf(adaptor.getLabels()))) ||
      failed(checkRows(infer, "max", tensorOf(adaptor.getMax()), logits)) ||
      failed(
          checkRows(infer, "sumexp", tensorOf(adaptor.getSumexp()), logits)) ||
      failed(checkCount(infer, adaptor.getCount())))
    return failure();
  if (std::optional<StringRef> of = adaptor.getSplitOf(); of && *of != "result")
    return infer.error("split_of must be \"result\", got \"" + *of + "\"");
  types.push_back(plain(logits.getShape(), logits.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

/// The element count of a static shape; none when it overflows int64_t.
static std::optional<int64_t> checkedNumElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    std::optional<int64_t> next = llvm::checkedMul(count, dim);
    if (!next)
      return std::nullopt;
    count = *next;
  }
  return count;
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  if (!input.hasStaticShape() || !result.hasStaticShape())
    return emitOpError("needs static shapes");
  std::optional<int64_t> inputCount = checkedNumElements(input.getShape());
  std::optional<int64_t> resultCount = checkedNumElements(result.getShape());
  if (!inputCount || !resultCount)
    return emitOpError("has more elements than fit in 64 bits");
  if (*inputCount != *resultCount)
    return emitOpError("changes the element count from ")
           << *inputCount << " to " << *resultCount;
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  Inference infer(loc, "pad");
  RankedTensorType x = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if ((int64_t)low.size() != x.getRank() || (int64_t)high.size() != x.getRank())
    return infer.error("low and high need one entry per axis (" +
                       Twine(x.getRank()) + ")");
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    if (low[i] < 0 || high[i] < 0)
      return infer.error("padding must be non-negative");
    std::optional<int64_t> size = llvm::checkedAdd(x.getDimSize(i), low[i]);
    if (size)
      size = llvm::checkedAdd(*size, high[i]);
    if (!size)
      return infer.error("the padded size of axis " + Twine(i) + " overflows");
    shape.push_back(*size);
  }
  types.push_back(plain(shape, x.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Inference infer(loc, "transpose");
  RankedTensorType x = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != x.getRank())
    return infer.error("permutation has " + Twine(perm.size()) +
                       " entries for a tensor of rank " + Twine(x.getRank()));
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= x.getRank() || seen[axis])
      return infer.error("permutation " + Inference::shapeStr(perm) +
                         " is not a permutation of the axes");
    seen[axis] = true;
    shape.push_back(x.getDimSize(axis));
  }
  types.push_back(plain(shape, x.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Inference infer(loc, "slice");
  RankedTensorType x = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> offsets = adaptor.getOffsets(), sizes = adaptor.getSizes();
  SmallVector<int64_t> strides(x.getRank(), 1);
  if (auto given = adaptor.getStrides())
    strides.assign(given->begin(), given->end());
  int64_t rank = x.getRank();
  if ((int64_t)offsets.size() != rank || (int64_t)sizes.size() != rank ||
      (int64_t)strides.size() != rank)
    return infer.error("offsets, sizes and strides need one entry per axis (" +
                       Twine(rank) + ")");
  for (int64_t i = 0; i < rank; ++i) {
    if (offsets[i] < 0 || sizes[i] < 0 || strides[i] < 1)
      return infer.error("axis " + Twine(i) +
                         ": offset and size must be non-negative and the "
                         "stride positive");
    if (sizes[i] == 0 || ShapedType::isDynamic(x.getDimSize(i)))
      continue;
    // The last element read is offset + (size - 1) * stride; computed with
    // overflow checks, since all three come straight from the input.
    std::optional<int64_t> last = llvm::checkedMul(sizes[i] - 1, strides[i]);
    if (last)
      last = llvm::checkedAdd(*last, offsets[i]);
    if (!last || *last >= x.getDimSize(i))
      return infer.error("axis " + Twine(i) + ": the window ends past dim " +
                         Twine(x.getDimSize(i)));
  }
  types.push_back(plain(sizes, x.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Inference infer(loc, "split");
  RankedTensorType x = tensorOf(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= x.getRank())
    return infer.error("axis " + Twine(axis) + " is out of range for rank " +
                       Twine(x.getRank()));
  int64_t dim = x.getDimSize(axis);
  if (ShapedType::isDynamic(dim))
    return infer.error("axis " + Twine(axis) + " has a dynamic size");
  int64_t total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0)
      return infer.error("split sizes must be non-negative");
    // Stop before the sum can overflow: it may not pass the axis size.
    if (size > dim - total)
      return infer.error("split sizes add up to more than the axis size " +
                         Twine(dim));
    total += size;
    SmallVector<int64_t> shape(x.getShape());
    shape[axis] = size;
    types.push_back(plain(shape, x.getElementType()));
  }
  if (total != dim)
    return infer.error("split sizes add up to " + Twine(total) +
                       " but the axis has " + Twine(dim));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Inference infer(loc, "concat");
  if (adaptor.getInputs().empty())
    return infer.error("needs at least one input");
  RankedTensorType first = tensorOf(adaptor.getInputs().front());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return infer.error("axis " + Twine(axis) + " is out of range for rank " +
                       Twine(first.getRank()));
  SmallVector<int64_t> shape(first.getShape());
  for (Value input : adaptor.getInputs().drop_front()) {
    RankedTensorType type = tensorOf(input);
    if (failed(infer.sameElementType(first, type, "input #0", "another input")))
      return failure();
    if (type.getRank() != first.getRank())
      return infer.error("inputs have different ranks");
    for (int64_t i = 0; i < first.getRank(); ++i)
      if (i != axis && type.getDimSize(i) != first.getDimSize(i))
        return infer.error("inputs differ on axis " + Twine(i) +
                           ", which is not the concat axis");
    // A dynamic size on the concat axis makes the result's dynamic; static
    // sizes add up, with an overflow check.
    int64_t size = type.getDimSize(axis);
    if (ShapedType::isDynamic(shape[axis]) || ShapedType::isDynamic(size)) {
      shape[axis] = ShapedType::kDynamic;
      continue;
    }
    std::optional<int64_t> sum = llvm::checkedAdd(shape[axis], size);
    if (!sum)
      return infer.error("the concat axis size overflows");
    shape[axis] = *sum;
  }
  types.push_back(plain(shape, first.getElementType()));
  return success();
}

static LogicalResult inferReduce(StringRef opName, std::optional<Location> loc,
                                 Value input, ArrayRef<int64_t> axes,
                                 bool keepdim, SmallVectorImpl<Type> &types) {
  Inference infer(loc, opName);
  RankedTensorType x = tensorOf(input);
  SmallVector<bool> reduced(x.getRank(), false);
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= x.getRank())
      return infer.error("axis " + Twine(axis) + " is out of range for rank " +
                         Twine(x.getRank()));
    if (reduced[axis])
      return infer.error("axis " + Twine(axis) + " is listed twice");
    reduced[axis] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    if (!reduced[i])
      shape.push_back(x.getDimSize(i));
    else if (keepdim)
      shape.push_back(1);
  }
  types.push_back(plain(shape, x.getElementType()));
  return success();
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferReduce("reduce_sum", loc, adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepdim(), types);
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  if (failed(checkCount(Inference(loc, "reduce_mean"), adaptor.getCount())))
    return failure();
  return inferReduce("reduce_mean", loc, adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepdim(), types);
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

static LogicalResult inferActivationGrad(StringRef opName,
                                         std::optional<Location> loc,
                                         Value gradOutput, Value saved,
                                         SmallVectorImpl<Type> &types) {
  Inference infer(loc, opName);
  RankedTensorType dy = tensorOf(gradOutput), x = tensorOf(saved);
  if (failed(infer.sameElementType(dy, x, "grad_output", "saved")) ||
      failed(infer.sameShape(dy, x, "grad_output", "saved")))
    return failure();
  types.push_back(plain(dy.getShape(), dy.getElementType()));
  return success();
}

#define NN_ACTIVATION_GRAD_INFERENCE(OP, NAME)                                 \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &types) {                                          \
    return inferActivationGrad(NAME, loc, adaptor.getGradOutput(),             \
                               adaptor.getSaved(), types);                     \
  }
NN_ACTIVATION_GRAD_INFERENCE(ReluGradOp, "relu_grad")
NN_ACTIVATION_GRAD_INFERENCE(GeluGradOp, "gelu_grad")
NN_ACTIVATION_GRAD_INFERENCE(TanhGradOp, "tanh_grad")
#undef NN_ACTIVATION_GRAD_INFERENCE

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Inference infer(loc, "layer_norm_grad");
  RankedTensorType dy = tensorOf(adaptor.getGradOutput());
  RankedTensorType x = tensorOf(adaptor.getInput());
  RankedTensorType gamma = tensorOf(adaptor.getGamma());
  if (failed(infer.sameElementType(dy, x, "grad_output", "input")) ||
      failed(infer.sameShape(dy, x, "grad_output", "input")) ||
      failed(checkLastDimParam(infer, x, gamma, "gamma")))
    return failure();
  types.push_back(plain(x.getShape(), x.getElementType()));
  types.push_back(plain(gamma.getShape(), gamma.getElementType()));
  types.push_back(plain(gamma.getShape(), gamma.getElementType()));
  return success();
}

LogicalResult SoftmaxGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Inference infer(loc, "softmax_grad");
  RankedTensorType dy = tensorOf(adaptor.getGradOutput());
  RankedTensorType y = tensorOf(adaptor.getOutput());
  if (failed(infer.sameElementType(dy, y, "grad_output", "output")) ||
      failed(infer.sameShape(dy, y, "grad_output", "output")) ||
      failed(
          checkSoftmaxAxis(infer, y, adaptor.getAxis(), adaptor.getCausal())))
    return failure();
  types.push_back(plain(y.getShape(), y.getElementType()));
  return success();
}

int64_t SoftmaxGradOp::getNormalizedAxis() {
  int64_t axis = getAxis();
  return axis < 0 ? axis + getOutput().getType().getRank() : axis;
}

LogicalResult
CrossEntropyGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  Inference infer(loc, "cross_entropy_grad");
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  if (failed(checkGradLoss(infer, tensorOf(adaptor.getGradLoss()))))
    return failure();
  // The gradient comes out in the logits' precision, computed in f32.
  if (failed(checkLogitsLabels(infer, logits, tensorOf(adaptor.getLabels()))) ||
      failed(checkCount(infer, adaptor.getCount())))
    return failure();
  types.push_back(plain(logits.getShape(), logits.getElementType()));
  return success();
}

LogicalResult EmbeddingGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Inference infer(loc, "embedding_grad");
  RankedTensorType dy = tensorOf(adaptor.getGradOutput());
  RankedTensorType ids = tensorOf(adaptor.getIds());
  if (dy.getRank() != ids.getRank() + 1 ||
      dy.getShape().drop_back() != ids.getShape())
    return infer.error("grad_output shape " +
                       Inference::shapeStr(dy.getShape()) +
                       " must be the ids shape " +
                       Inference::shapeStr(ids.getShape()) + " plus a dim");
  // I64Attr reads back as uint64_t; the attribute is signless, so a negative
  // vocab_size has to be caught as a signed value.
  int64_t vocabSize = static_cast<int64_t>(adaptor.getVocabSize());
  if (vocabSize < 1)
    return infer.error("vocab_size must be positive, got " + Twine(vocabSize));
  types.push_back(
      plain({vocabSize, dy.getShape().back()}, dy.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

LogicalResult NonfiniteCountOp::inferReturnTypes(MLIRContext *context,
                                                 std::optional<Location>,
                                                 Adaptor,
                                                 SmallVectorImpl<Type> &types) {
  types.push_back(plain({}, Float32Type::get(context)));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Inference infer(loc, "select");
  RankedTensorType a = tensorOf(adaptor.getOnTrue());
  RankedTensorType b = tensorOf(adaptor.getOnFalse());
  if (failed(infer.sameElementType(a, b, "on_true", "on_false")) ||
      failed(infer.sameShape(a, b, "on_true", "on_false")))
    return failure();
  types.push_back(plain(a.getShape(), a.getElementType()));
  return success();
}

LogicalResult LossScaleUpdateOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  Inference infer(loc, "loss_scale_update");
  if (static_cast<int64_t>(adaptor.getWindow()) < 1 ||
      static_cast<int64_t>(adaptor.getHysteresis()) < 1)
    return infer.error("window and hysteresis must be positive");
  if (!(adaptor.getMinScale().convertToDouble() > 0))
    return infer.error("min_scale must be positive");
  types.assign(3, plain({}, Float32Type::get(context)));
  return success();
}

LogicalResult
ClipCoefficientOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  Inference infer(loc, "clip_coefficient");
  RankedTensorType sumSquares = tensorOf(adaptor.getSumSquares());
  if (sumSquares.getRank() != 0)
    return infer.error("sum_squares must be 0-D");
  double maxNorm = adaptor.getMaxNorm().convertToDouble();
  double scale = adaptor.getGradScale().convertToDouble();
  if (!(maxNorm > 0) || std::isinf(maxNorm))
    return infer.error("max_norm must be finite and positive");
  if (!(scale > 0) || std::isinf(scale))
    return infer.error("grad_scale must be finite and positive");
  types.push_back(plain({}, sumSquares.getElementType()));
  return success();
}

/// The gradient may be narrower than the parameter (an fp16/bf16 gradient
/// for an fp32 master weight), never wider.
static LogicalResult checkGradientPrecision(const Inference &infer,
                                            RankedTensorType param,
                                            RankedTensorType grad) {
  if (grad.getElementType().getIntOrFloatBitWidth() >
      param.getElementType().getIntOrFloatBitWidth())
    return infer.error(
        "grad element type " +
        llvm::Twine(grad.getElementType().getIntOrFloatBitWidth()) +
        "-bit is wider than the param's");
  return success();
}

static LogicalResult checkGradScale(const Inference &infer, double scale) {
  if (!(scale > 0) || std::isinf(scale))
    return infer.error("grad_scale must be finite and positive");
  return success();
}

static LogicalResult checkLearningRate(const Inference &infer, double lr) {
  if (!(lr >= 0) || std::isinf(lr))
    return infer.error("lr must be finite and non-negative, got " +
                       formatNumber(lr));
  return success();
}

LogicalResult SgdOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  Inference infer(loc, "sgd");
  RankedTensorType p = tensorOf(adaptor.getParam());
  RankedTensorType g = tensorOf(adaptor.getGrad());
  if (failed(checkGradientPrecision(infer, p, g)) ||
      failed(infer.sameShape(p, g, "param", "grad")) ||
      failed(checkLearningRate(infer, adaptor.getLr().convertToDouble())) ||
      failed(checkGradScale(infer, adaptor.getGradScale().convertToDouble())))
    return failure();
  types.push_back(plain(p.getShape(), p.getElementType()));
  return success();
}

// SGD keeps no state.
MutableOperandRange SgdOp::getStatesMutable() {
  return MutableOperandRange(getOperation(), getOperation()->getNumOperands(),
                             0);
}

ResultRange SgdOp::getUpdatedStates() {
  return getOperation()->getResults().slice(getOperation()->getNumResults(), 0);
}

// Adam's states are the moments, declared next to each other with their
// results in the same order (NNOps.td); the step is only read.
template <typename OpTy> static MutableOperandRange adamStates(OpTy op) {
  return MutableOperandRange(op, op.getExpAvgMutable().getOperandNumber(), 2);
}

template <typename OpTy> static ResultRange adamUpdatedStates(OpTy op) {
  return op->getResults().slice(
      cast<OpResult>(op.getNewExpAvg()).getResultNumber(), 2);
}

MutableOperandRange AdamOp::getStatesMutable() { return adamStates(*this); }

ResultRange AdamOp::getUpdatedStates() { return adamUpdatedStates(*this); }

MutableOperandRange AdamWOp::getStatesMutable() { return adamStates(*this); }

ResultRange AdamWOp::getUpdatedStates() { return adamUpdatedStates(*this); }

template <typename Adaptor>
static LogicalResult inferAdam(StringRef opName, std::optional<Location> loc,
                               Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Inference infer(loc, opName);
  RankedTensorType p = tensorOf(adaptor.getParam());
  RankedTensorType g = tensorOf(adaptor.getGrad());
  RankedTensorType m = tensorOf(adaptor.getExpAvg());
  RankedTensorType v = tensorOf(adaptor.getExpAvgSq());
  if (failed(checkGradientPrecision(infer, p, g)) ||
      failed(checkGradScale(infer, adaptor.getGradScale().convertToDouble())) ||
      failed(infer.sameShape(p, g, "param", "grad")) ||
      failed(infer.sameElementType(p, m, "param", "exp_avg")) ||
      failed(infer.sameShape(p, m, "param", "exp_avg")) ||
      failed(infer.sameElementType(p, v, "param", "exp_avg_sq")) ||
      failed(infer.sameShape(p, v, "param", "exp_avg_sq")) ||
      failed(checkLearningRate(infer, adaptor.getLr().convertToDouble())))
    return failure();
  double beta1 = adaptor.getBeta1().convertToDouble();
  double beta2 = adaptor.getBeta2().convertToDouble();
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return infer.error("betas must lie in [0, 1), got (" + formatNumber(beta1) +
                       ", " + formatNumber(beta2) + ")");
  if (!(adaptor.getEps().convertToDouble() >= 0))
    return infer.error("eps must be non-negative");
  if (!(adaptor.getWeightDecay().convertToDouble() >= 0))
    return infer.error("weight_decay must be non-negative");
  for (int i = 0; i < 3; ++i)
    types.push_back(plain(p.getShape(), p.getElementType()));
  return success();
}

LogicalResult AdamOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferAdam("adam", loc, adaptor, types);
}

LogicalResult AdamWOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferAdam("adamw", loc, adaptor, types);
}

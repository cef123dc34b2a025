//===- SymbolicDims.cpp - Symbolic dimensions of dfg values ---------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/SymbolicDims.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/AffineExprVisitor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

using namespace mlir;

namespace meshc::dfg {

//===----------------------------------------------------------------------===//
// DimTable
//===----------------------------------------------------------------------===//

AffineExpr DimTable::symbol(StringRef name) {
  auto [it, added] = positions_.try_emplace(name, names_.size());
  if (added)
    names_.push_back(name.str());
  return getAffineSymbolExpr(it->second, context_);
}

SmallVector<AffineExpr> DimTable::read(AffineMap map, ArrayAttr names) {
  SmallVector<AffineExpr> replacements;
  for (Attribute name : names)
    replacements.push_back(symbol(cast<StringAttr>(name).getValue()));
  SmallVector<AffineExpr> exprs;
  for (AffineExpr e : map.getResults())
    exprs.push_back(
        simplifyAffineExpr(e.replaceSymbols(replacements), 0, names_.size()));
  return exprs;
}

std::pair<AffineMap, ArrayAttr>
DimTable::write(ArrayRef<AffineExpr> exprs) const {
  assert(!llvm::is_contained(exprs, AffineExpr()) && "no null expressions");
  // Renumber the symbols used, in order of first use.
  SmallVector<int64_t> local(names_.size(), -1);
  SmallVector<Attribute> used;
  for (AffineExpr e : exprs)
    e.walk([&](AffineExpr sub) {
      if (auto s = dyn_cast<AffineSymbolExpr>(sub))
        if (local[s.getPosition()] < 0) {
          local[s.getPosition()] = used.size();
          used.push_back(StringAttr::get(context_, names_[s.getPosition()]));
        }
    });
  SmallVector<AffineExpr> replacements;
  for (int64_t k : local)
    replacements.push_back(
        getAffineSymbolExpr(k < 0 ? 0 : static_cast<unsigned>(k), context_));
  SmallVector<AffineExpr> results;
  for (AffineExpr e : exprs)
    results.push_back(e.replaceSymbols(replacements));
  return {AffineMap::get(0, used.size(), results, context_),
          ArrayAttr::get(context_, used)};
}

namespace {

/// Recursive descent over a derived dimension name:
///   sum     := product (('+' | '-') product)*
///   product := atom (('*' | '//' | '/' | '%') atom)*
///   atom    := integer | name | '(' sum ')' | '-' atom
/// Division and remainder need a constant right-hand side (affine).
class NameParser {
public:
  NameParser(StringRef text, DimTable &table) : text_(text), table_(table) {}

  AffineExpr parse() {
    AffineExpr e = sum();
    skipSpace();
    return e && text_.empty() ? e : AffineExpr();
  }

private:
  void skipSpace() { text_ = text_.ltrim(); }
  bool consume(StringRef token) {
    skipSpace();
    return text_.consume_front(token);
  }

  AffineExpr sum() {
    AffineExpr e = product();
    while (e) {
      if (consume("+"))
        e = add(e, product());
      else if (consume("-"))
        e = add(e, negate(product()));
      else
        break;
    }
    return e;
  }

  AffineExpr product() {
    AffineExpr e = atom();
    while (e) {
      if (consume("*")) {
        AffineExpr r = atom();
        e = r && (isa<AffineConstantExpr>(e) || isa<AffineConstantExpr>(r))
                ? e * r
                : AffineExpr();
      } else if (consume("//") || consume("/")) {
        AffineExpr r = atom();
        auto c = dyn_cast_or_null<AffineConstantExpr>(r);
        e = c && c.getValue() > 0 ? e.floorDiv(c) : AffineExpr();
      } else if (consume("%")) {
        AffineExpr r = atom();
        auto c = dyn_cast_or_null<AffineConstantExpr>(r);
        e = c && c.getValue() > 0 ? e % c : AffineExpr();
      } else {
        break;
      }
    }
    return e;
  }

  AffineExpr atom() {
    skipSpace();
    if (consume("(")) {
      AffineExpr e = sum();
      return consume(")") ? e : AffineExpr();
    }
    if (consume("-"))
      return negate(atom());
    size_t n = 0;
    if (!text_.empty() && llvm::isDigit(text_[0])) {
      while (n < text_.size() && llvm::isDigit(text_[n]))
        ++n;
      int64_t value;
      if (text_.take_front(n).getAsInteger(10, value))
        return {};
      text_ = text_.drop_front(n);
      return getAffineConstantExpr(value, table_.context());
    }
    while (n < text_.size() &&
           (llvm::isAlnum(text_[n]) || text_[n] == '_' || text_[n] == '.'))
      ++n;
    if (n == 0)
      return {};
    StringRef name = text_.take_front(n);
    text_ = text_.drop_front(n);
    return table_.symbol(name);
  }

  static AffineExpr negate(AffineExpr e) { return e ? -e : e; }
  static AffineExpr add(AffineExpr l, AffineExpr r) {
    return l && r ? l + r : AffineExpr();
  }

  StringRef text_;
  DimTable &table_;
};

} // namespace

bool isDerivedDimName(StringRef name) {
  // Arithmetic: only names, integers, operators, parentheses and spaces,
  // with at least one operator ("batch size" or "batch-size" is a name of
  // its own).
  bool hasOperator = false;
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (llvm::isAlnum(c) || c == '_' || c == '.' || c == ' ')
      continue;
    if (c == '(' || c == ')') {
      depth += c == '(' ? 1 : -1;
      if (depth < 0)
        return false;
      continue;
    }
    auto word = [](char w) { return llvm::isAlnum(w) || w == '_'; };
    if (c == '-' && i > 0 && i + 1 < name.size() && word(name[i - 1]) &&
        word(name[i + 1]))
      return false; // joins two words of one name
    if (!StringRef("+-*/%").contains(c))
      return false;
    hasOperator = true;
  }
  return hasOperator && depth == 0;
}

AffineExpr DimTable::parseName(StringRef name) {
  if (name.empty())
    return {};
  if (!isDerivedDimName(name))
    return symbol(name);
  // Null where the arithmetic is not affine (`s0*s1`): no rule derives it.
  AffineExpr e = NameParser(name, *this).parse();
  return e ? simplifyAffineExpr(e, 0, size()) : e;
}

SmallVector<std::string> namesInDimName(MLIRContext *context,
                                        StringRef name) {
  DimTable table(context);
  (void)table.parseName(name);
  SmallVector<std::string> names;
  for (unsigned k = 0; k < table.size(); ++k)
    names.push_back(table.name(k).str());
  return names;
}

std::optional<int64_t> sizeOfDimName(MLIRContext *context, StringRef name,
                                     const DimBindings &bindings) {
  DimTable table(context);
  AffineExpr e = table.parseName(name);
  if (!e)
    return std::nullopt;
  llvm::Expected<int64_t> size = evaluateDim(e, table, bindings);
  if (!size) {
    llvm::consumeError(size.takeError());
    return std::nullopt;
  }
  return *size;
}

llvm::Expected<int64_t> evaluateDim(AffineExpr expr, const DimTable &table,
                              const DimBindings &bindings) {
  auto [map, names] = table.write({expr});
  llvm::Expected<SmallVector<int64_t>> values =
      evaluateDims(map, names, bindings);
  if (!values)
    return values.takeError();
  return (*values)[0];
}

std::string DimTable::format(AffineExpr expr) const {
  if (!expr)
    return "?";
  std::string text;
  llvm::raw_string_ostream os(text);
  expr.print(os);
  // Symbols print as s<k>; replace them by their names, longest index first
  // so that s1 does not match inside s12.
  for (int64_t k = static_cast<int64_t>(names_.size()) - 1; k >= 0; --k) {
    std::string from = "s" + std::to_string(k);
    size_t at = 0;
    while ((at = text.find(from, at)) != std::string::npos) {
      bool tail = at + from.size() < text.size() &&
                  isdigit(static_cast<unsigned char>(text[at + from.size()]));
      bool head =
          at > 0 && (isalnum(static_cast<unsigned char>(text[at - 1])) ||
                     text[at - 1] == '_');
      if (tail || head) {
        at += from.size();
        continue;
      }
      text.replace(at, from.size(), names_[k]);
      at += names_[k].size();
    }
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Evaluation and checks
//===----------------------------------------------------------------------===//

namespace {

/// The value of `e` with symbol k = values[k].
llvm::Expected<int64_t> evalExpr(AffineExpr e, ArrayRef<int64_t> values) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue();
  if (auto s = dyn_cast<AffineSymbolExpr>(e))
    return values[s.getPosition()];
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return llvm::createStringError("a symbolic dimension refers to a "
                                   "dimension variable");
  auto l = evalExpr(bin.getLHS(), values);
  if (!l)
    return l.takeError();
  auto r = evalExpr(bin.getRHS(), values);
  if (!r)
    return r.takeError();
  int64_t a = *l, b = *r;
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return a + b;
  case AffineExprKind::Mul:
    return a * b;
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
  case AffineExprKind::Mod: {
    if (b == 0)
      return llvm::createStringError("division by zero in a symbolic "
                                     "dimension");
    int64_t q = a / b, m = a % b;
    if (e.getKind() == AffineExprKind::Mod)
      return m < 0 ? m + (b < 0 ? -b : b) : m;
    if (e.getKind() == AffineExprKind::FloorDiv)
      return (m != 0 && ((m < 0) != (b < 0))) ? q - 1 : q;
    return (m != 0 && ((m < 0) == (b < 0))) ? q + 1 : q;
  }
  default:
    return llvm::createStringError("unsupported symbolic expression");
  }
}

} // namespace

llvm::Expected<SmallVector<int64_t>>
evaluateDims(AffineMap map, ArrayAttr names, const DimBindings &bindings) {
  SmallVector<int64_t> values;
  for (Attribute a : names) {
    StringRef name = cast<StringAttr>(a).getValue();
    auto it = bindings.find(name);
    if (it == bindings.end())
      return llvm::createStringError("the symbolic dimension '" + name +
                                     "' has no size (no input has it)");
    values.push_back(it->second);
  }
  SmallVector<int64_t> results;
  for (AffineExpr e : map.getResults()) {
    auto v = evalExpr(e, values);
    if (!v)
      return v.takeError();
    results.push_back(*v);
  }
  return results;
}

namespace {
/// The operands of a chain of `kind` (Add or Mul) in `e`, flattened.
void chainOperands(AffineExpr e, AffineExprKind kind,
                   SmallVectorImpl<AffineExpr> &out) {
  if (e.getKind() == kind) {
    auto bin = cast<AffineBinaryOpExpr>(e);
    chainOperands(bin.getLHS(), kind, out);
    chainOperands(bin.getRHS(), kind, out);
    return;
  }
  out.push_back(e);
}

/// `e` as a product: its constant factors multiplied into `constant`, the
/// others appended to `atoms` (`(s0 * 4) * s1` is 4, [s0, s1]). A sum's
/// common constant factor comes out of it too (`s0 * 64 + 64` is 64,
/// [s0 + 1]).
void multiplicands(AffineExpr e, int64_t &constant,
                   SmallVectorImpl<AffineExpr> &atoms) {
  if (auto c = dyn_cast<AffineConstantExpr>(e)) {
    constant *= c.getValue();
    return;
  }
  if (e.getKind() == AffineExprKind::Mul) {
    auto mul = cast<AffineBinaryOpExpr>(e);
    multiplicands(mul.getLHS(), constant, atoms);
    multiplicands(mul.getRHS(), constant, atoms);
    return;
  }
  if (e.getKind() == AffineExprKind::Add) {
    SmallVector<AffineExpr> terms;
    chainOperands(e, AffineExprKind::Add, terms);
    SmallVector<std::pair<int64_t, SmallVector<AffineExpr>>> split;
    int64_t common = 0;
    for (AffineExpr t : terms) {
      int64_t k = 1;
      SmallVector<AffineExpr> rest;
      multiplicands(t, k, rest);
      common = std::gcd(common, k);
      split.push_back({k, std::move(rest)});
    }
    if (common > 1) {
      AffineExpr sum = getAffineConstantExpr(0, e.getContext());
      for (auto &[k, rest] : split) {
        AffineExpr term = getAffineConstantExpr(k / common, e.getContext());
        for (AffineExpr f : rest)
          term = term * f;
        sum = sum + term;
      }
      constant *= common;
      atoms.push_back(sum);
      return;
    }
  }
  atoms.push_back(e);
}

std::string printed(AffineExpr e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  e.print(os);
  return s;
}

/// `e` with the operands of every sum and product in one order (sorted by
/// their printed forms), so that s1 * s2 and s2 * s1 are one expression,
/// which simplification alone does not make of products of symbols.
AffineExpr canonical(AffineExpr e) {
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return e;
  AffineExprKind kind = e.getKind();
  if (kind != AffineExprKind::Add && kind != AffineExprKind::Mul) {
    AffineExpr l = canonical(bin.getLHS()), r = canonical(bin.getRHS());
    switch (kind) {
    case AffineExprKind::FloorDiv:
      return l.floorDiv(r);
    case AffineExprKind::CeilDiv:
      return l.ceilDiv(r);
    default:
      return l % r;
    }
  }
  SmallVector<AffineExpr> operands;
  chainOperands(e, kind, operands);
  SmallVector<std::pair<std::string, AffineExpr>> keyed;
  for (AffineExpr o : operands) {
    AffineExpr c = canonical(o);
    keyed.push_back({printed(c), c});
  }
  llvm::stable_sort(keyed, [](const auto &x, const auto &y) {
    return x.first < y.first;
  });
  AffineExpr result = keyed.front().second;
  for (auto &entry : llvm::drop_begin(keyed))
    result = kind == AffineExprKind::Add ? result + entry.second
                                         : result * entry.second;
  return result;
}
} // namespace

namespace {
/// The factors of the products of `a` and of `b` (multiplicands), each
/// factor on both sides (sameDim) taken out of both: the constants'
/// products in `ka` and `kb`, the rest in `fa` and `fb`. False where a
/// dimension is null or both sides are empty.
bool uncommonFactors(ArrayRef<AffineExpr> a, ArrayRef<AffineExpr> b,
                     int64_t &ka, SmallVectorImpl<AffineExpr> &fa, int64_t &kb,
                     SmallVectorImpl<AffineExpr> &fb) {
  if (llvm::is_contained(a, AffineExpr()) ||
      llvm::is_contained(b, AffineExpr()) || (a.empty() && b.empty()))
    return false;
  ka = kb = 1;
  SmallVector<AffineExpr> all;
  for (AffineExpr e : a)
    multiplicands(e, ka, fa);
  for (AffineExpr e : b)
    multiplicands(e, kb, all);
  for (AffineExpr e : all) {
    auto *match =
        llvm::find_if(fa, [&](AffineExpr t) { return sameDim(t, e); });
    if (match != fa.end())
      fa.erase(match);
    else
      fb.push_back(e);
  }
  return true;
}

/// `k` times the product of `factors`.
AffineExpr productOf(MLIRContext *ctx, int64_t k, ArrayRef<AffineExpr> factors) {
  AffineExpr p = getAffineConstantExpr(k, ctx);
  for (AffineExpr f : factors)
    p = p * f;
  return p;
}
} // namespace

AffineExpr divideDims(ArrayRef<AffineExpr> whole, ArrayRef<AffineExpr> part) {
  // Both sides as products of their dimensions' factors, so that a merged
  // dimension cancels against its parts ([b * 4, s, s] over [b, 4, s] is s).
  int64_t num, den;
  SmallVector<AffineExpr> top, bottom;
  if (!uncommonFactors(whole, part, num, top, den, bottom))
    return {};
  MLIRContext *ctx = (whole.empty() ? part : whole).front().getContext();
  if (bottom.empty() && den != 0 && num % den == 0)
    return productOf(ctx, num / den, top);
  return productOf(ctx, num, top).floorDiv(productOf(ctx, den, bottom));
}

std::pair<AffineExpr, AffineExpr>
withoutCommonFactors(ArrayRef<AffineExpr> a, ArrayRef<AffineExpr> b) {
  int64_t ka, kb;
  SmallVector<AffineExpr> fa, fb;
  if (!uncommonFactors(a, b, ka, fa, kb, fb))
    return {};
  MLIRContext *ctx = (a.empty() ? b : a).front().getContext();
  if (int64_t g = std::gcd(ka, kb); g > 1) {
    ka /= g;
    kb /= g;
  }
  return {canonical(productOf(ctx, ka, fa)), canonical(productOf(ctx, kb, fb))};
}

namespace {
/// The value of `e` with its one symbol (at `position`) at `value`
/// (evalExpr); nullopt where it does not evaluate.
std::optional<int64_t> valueAt(AffineExpr e, unsigned position,
                               int64_t value) {
  SmallVector<int64_t> values(position + 1, 0);
  values[position] = value;
  llvm::Expected<int64_t> v = evalExpr(e, values);
  if (!v) {
    llvm::consumeError(v.takeError());
    return std::nullopt;
  }
  return *v;
}

/// A period of `e` in its one symbol s: an M such that `e` at s = M q + r
/// is linear in q for every r (the least common multiple, over its paths
/// from the root, of the product of the constant divisors on the path);
/// nullopt where `e` has another symbol, a dimension, a product or a
/// quotient by a non-constant, or a period above 1024. `symbol` is the one
/// symbol seen.
std::optional<int64_t> periodOf(AffineExpr e, std::optional<unsigned> &symbol) {
  constexpr int64_t kMost = 1024;
  if (isa<AffineConstantExpr>(e))
    return 1;
  if (auto s = dyn_cast<AffineSymbolExpr>(e)) {
    if (symbol && *symbol != s.getPosition())
      return std::nullopt;
    symbol = s.getPosition();
    return 1;
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  std::optional<int64_t> l = periodOf(bin.getLHS(), symbol);
  if (!l)
    return std::nullopt;
  if (bin.getKind() == AffineExprKind::Mul &&
      !isa<AffineConstantExpr>(bin.getLHS()) &&
      !isa<AffineConstantExpr>(bin.getRHS()))
    return std::nullopt; // a product of two terms of the symbol
  if (bin.getKind() == AffineExprKind::Add ||
      bin.getKind() == AffineExprKind::Mul) {
    std::optional<int64_t> r = periodOf(bin.getRHS(), symbol);
    if (!r)
      return std::nullopt;
    int64_t m = std::lcm(*l, *r);
    return m <= kMost ? std::optional<int64_t>(m) : std::nullopt;
  }
  auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
  if (!c || c.getValue() < 1 || *l * c.getValue() > kMost)
    return std::nullopt;
  return *l * c.getValue();
}

/// Whether `e` has a quotient or remainder.
bool hasQuotient(AffineExpr e) {
  bool found = false;
  e.walk([&](AffineExpr sub) {
    found |= isa<AffineBinaryOpExpr>(sub) &&
             sub.getKind() != AffineExprKind::Add &&
             sub.getKind() != AffineExprKind::Mul;
  });
  return found;
}

/// Whether `a` and `b`, expressions of one symbol whose quotients and
/// remainders are by constants, are equal at every size: with M a common
/// period (periodOf), each is linear in q over each class s = M q + r, so
/// equal values at two sizes of each class (1 to 2M) prove them equal.
/// (The convolution's `((S - 9) ceildiv 5 - 2) ceildiv 2` and torch's
/// `(S floordiv 10 - 3) floordiv 2 + 1` for the same length.)
bool sameQuasiAffine(AffineExpr a, AffineExpr b) {
  if (!hasQuotient(a) && !hasQuotient(b))
    return false;
  std::optional<unsigned> symbol;
  std::optional<int64_t> pa = periodOf(a, symbol), pb = periodOf(b, symbol);
  if (!pa || !pb || !symbol)
    return false;
  int64_t period = std::lcm(*pa, *pb);
  for (int64_t v = 1; v <= 2 * period; ++v) {
    std::optional<int64_t> x = valueAt(a, *symbol, v),
                           y = valueAt(b, *symbol, v);
    if (!x || !y || *x != *y)
      return false;
  }
  return true;
}
} // namespace

AffineExpr ceilDivide(AffineExpr e, int64_t d) {
  return d == 1 ? e : (e + (d - 1)).floorDiv(d);
}

bool sameDim(AffineExpr a, AffineExpr b) {
  if (!a || !b)
    return false;
  if (a == b)
    return true;
  AffineExpr diff = a - b;
  unsigned symbols = 0;
  for (AffineExpr e : {a, b})
    e.walk([&](AffineExpr sub) {
      if (auto s = dyn_cast<AffineSymbolExpr>(sub))
        symbols = std::max(symbols, s.getPosition() + 1);
    });
  auto c = dyn_cast<AffineConstantExpr>(simplifyAffineExpr(diff, 0, symbols));
  if (c)
    return c.getValue() == 0;
  if (sameQuasiAffine(a, b))
    return true;
  // Products of symbols in another order.
  AffineExpr ca = canonical(a), cb = canonical(b);
  if (ca == cb)
    return true;
  auto cd = dyn_cast<AffineConstantExpr>(simplifyAffineExpr(ca - cb, 0, symbols));
  return cd && cd.getValue() == 0;
}

llvm::Error verifySymbols(AffineMap map, ArrayAttr names, StringRef what) {
  if (map.getNumDims() != 0 || map.getNumSymbols() != names.size()) // S1
    return llvm::createStringError(
        what + " must have no dimensions and one symbol per name (" +
        std::to_string(names.size()) + "), got " +
        std::to_string(map.getNumDims()) + " dimension(s) and " +
        std::to_string(map.getNumSymbols()) + " symbol(s)");
  llvm::StringSet<> seen;
  for (Attribute a : names) { // S2
    StringRef name = cast<StringAttr>(a).getValue();
    if (name.empty() || !seen.insert(name).second)
      return llvm::createStringError("symbol names must be distinct and "
                                     "non-empty");
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// SymbolicShapes
//===----------------------------------------------------------------------===//

using Dims = SmallVector<AffineExpr>;

Dims broadcastDims(ArrayRef<ArrayRef<AffineExpr>> all, MLIRContext *ctx) {
  size_t rank = 0;
  for (ArrayRef<AffineExpr> d : all)
    rank = std::max(rank, d.size());
  Dims result;
  for (size_t i = 0; i < rank; ++i) {
    AffineExpr pick, symbolic;
    bool unknown = false;
    for (ArrayRef<AffineExpr> d : all) {
      if (i + d.size() < rank)
        continue;
      AffineExpr e = d[i + d.size() - rank];
      if (!e) {
        unknown = true;
        continue;
      }
      if (auto c = dyn_cast<AffineConstantExpr>(e)) {
        if (c.getValue() != 1)
          pick = e;
      } else if (!symbolic) {
        symbolic = e;
      }
    }
    result.push_back(pick       ? pick
                     : symbolic ? symbolic
                     : unknown  ? AffineExpr()
                                : getAffineConstantExpr(1, ctx));
  }
  return result;
}

DimBounds boundsOf(AffineExpr e) {
  return boundsOf(e, [](unsigned) { return DimBounds{1, std::nullopt}; });
}

namespace {
DimBounds intervalBounds(AffineExpr e,
                         llvm::function_ref<DimBounds(unsigned)> symbolBounds);

/// The exact bounds of `e`, an expression of one symbol whose quotients and
/// remainders are by constants, over the symbol's bounds: with M its period
/// (periodOf), `e` is linear in q over each class s = M q + r,
/// so its first two values in each class give the class's least and
/// greatest. (A pad to an even length, `x - 2 * ((x + 1) floordiv 2) + 1`,
/// lies in [0, 1], which intervals of its terms do not see.)
std::optional<DimBounds>
periodicBounds(AffineExpr e,
               llvm::function_ref<DimBounds(unsigned)> symbolBounds) {
  if (!hasQuotient(e))
    return std::nullopt;
  std::optional<unsigned> symbol;
  std::optional<int64_t> periodOrNone = periodOf(e, symbol);
  if (!periodOrNone || !symbol)
    return std::nullopt;
  int64_t period = *periodOrNone;
  DimBounds given = symbolBounds(*symbol);
  if (!given.least)
    return std::nullopt;
  int64_t first = *given.least;
  std::optional<int64_t> least, most;
  bool belowAll = false, aboveAll = false;
  for (int64_t s0 = first; s0 < first + period; ++s0) {
    if (given.most && s0 > *given.most)
      break;
    std::optional<int64_t> v0 = valueAt(e, *symbol, s0),
                           v1 = valueAt(e, *symbol, s0 + period);
    if (!v0 || !v1)
      return std::nullopt;
    int64_t slope = *v1 - *v0;
    // The class's last value where the symbol is bounded above.
    std::optional<int64_t> last;
    if (given.most)
      last = *v0 + slope * ((*given.most - s0) / period);
    int64_t lo = *v0, hi = *v0;
    if (slope < 0) {
      if (last)
        lo = *last;
      else
        belowAll = true;
    } else if (slope > 0) {
      if (last)
        hi = *last;
      else
        aboveAll = true;
    }
    least = least ? std::min(*least, lo) : lo;
    most = most ? std::max(*most, hi) : hi;
  }
  if (!least)
    return std::nullopt;
  return DimBounds{belowAll ? std::nullopt : least,
                   aboveAll ? std::nullopt : most};
}
} // namespace

DimBounds boundsOf(AffineExpr e,
                   llvm::function_ref<DimBounds(unsigned)> symbolBounds) {
  DimBounds bounds = intervalBounds(e, symbolBounds);
  if (bounds.least && bounds.most)
    return bounds;
  if (std::optional<DimBounds> exact = periodicBounds(e, symbolBounds)) {
    if (exact->least)
      bounds.least =
          bounds.least ? std::max(*bounds.least, *exact->least) : exact->least;
    if (exact->most)
      bounds.most =
          bounds.most ? std::min(*bounds.most, *exact->most) : exact->most;
  }
  return bounds;
}

namespace {
DimBounds intervalBounds(AffineExpr e,
                         llvm::function_ref<DimBounds(unsigned)> symbolBounds) {
  constexpr int64_t kLimit = int64_t(1) << 40;
  using Bound = std::optional<int64_t>;
  // Bounds beyond 2^40 are dropped, so no product or sum below overflows.
  auto clip = [&](Bound v) -> Bound {
    return v && std::abs(*v) <= kLimit ? v : std::nullopt;
  };
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return {clip(c.getValue()), clip(c.getValue())};
  if (auto symbol = dyn_cast<AffineSymbolExpr>(e))
    return symbolBounds(symbol.getPosition());
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return {};
  DimBounds l = intervalBounds(bin.getLHS(), symbolBounds),
            r = intervalBounds(bin.getRHS(), symbolBounds);
  auto sum = [&](Bound x, Bound y) -> Bound {
    return x && y ? clip(*x + *y) : std::nullopt;
  };
  auto floorDiv = [](Bound v, int64_t d) -> Bound {
    if (!v)
      return std::nullopt;
    return *v >= 0 ? *v / d : -((-*v + d - 1) / d);
  };
  auto divisor = [&]() -> Bound {
    auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
    return c && c.getValue() > 0 ? Bound(c.getValue()) : std::nullopt;
  };
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return {sum(l.least, r.least), sum(l.most, r.most)};
  case AffineExprKind::Mul: {
    // By a constant k (on either side): scaled, swapped where k < 0.
    for (auto [x, k] : {std::pair(l, r), std::pair(r, l)}) {
      if (!k.least || k.least != k.most)
        continue;
      auto scale = [&](Bound v) -> Bound {
        return v ? clip(*v * *k.least) : std::nullopt;
      };
      if (*k.least >= 0)
        return {scale(x.least), scale(x.most)};
      return {scale(x.most), scale(x.least)};
    }
    // Two factors of at least 0: the product grows with both.
    if (l.least && *l.least >= 0 && r.least && *r.least >= 0)
      return {clip(*l.least * *r.least),
              l.most && r.most ? clip(*l.most * *r.most) : std::nullopt};
    return {};
  }
  case AffineExprKind::Mod:
    if (Bound d = divisor())
      return {0, *d - 1};
    // By a symbolic divisor of at least 1: below it, and within a
    // dividend of at least 0.
    if (r.least && *r.least >= 1) {
      Bound most = r.most ? Bound(*r.most - 1) : std::nullopt;
      if (l.least && *l.least >= 0 && l.most)
        most = most ? std::min(*most, *l.most) : *l.most;
      return {0, most};
    }
    return {};
  case AffineExprKind::FloorDiv:
    if (Bound d = divisor())
      return {floorDiv(l.least, *d), floorDiv(l.most, *d)};
    // A dividend of at least 0 by a symbolic divisor of at least 1 (a
    // size divided by a sequence length, as an export traced at one length
    // writes `320 floordiv seq`): largest at the least divisor, least at
    // the largest.
    if (l.least && *l.least >= 0 && r.least && *r.least >= 1)
      return {r.most ? floorDiv(l.least, *r.most) : Bound(0),
              floorDiv(l.most, *r.least)};
    return {};
  case AffineExprKind::CeilDiv: {
    auto ceilDivBy = [&](Bound v, int64_t d) -> Bound {
      Bound down = floorDiv(v ? Bound(-*v) : std::nullopt, d);
      return down ? Bound(-*down) : std::nullopt;
    };
    if (Bound d = divisor())
      return {ceilDivBy(l.least, *d), ceilDivBy(l.most, *d)};
    if (l.least && *l.least >= 0 && r.least && *r.least >= 1)
      return {r.most ? ceilDivBy(l.least, *r.most) : Bound(*l.least > 0),
              l.most ? ceilDivBy(l.most, *r.least) : std::nullopt};
    return {};
  }
  default:
    return {};
  }
}
} // namespace

AffineExpr sliceLength(AffineExpr dim, AffineExpr start, AffineExpr end,
                       int64_t step) {
  if (!dim || !start || !end || step == 0)
    return {};
  if (step < 0) {
    // Backwards (torch.flip: start -1, end INT64_MIN, step -1), over
    // constant bounds: the start clamped to the last element, the end to
    // one before the first, as ONNX does; a bound that could lie either
    // side of the dimension's end is no expression.
    auto c = dyn_cast<AffineConstantExpr>(start);
    auto e = dyn_cast<AffineConstantExpr>(end);
    if (!c || !e)
      return {};
    constexpr int64_t kFar = int64_t(1) << 40;
    std::optional<int64_t> least = boundsOf(dim).least;
    // v < dim for every size.
    auto within = [&](int64_t v) {
      return isa<AffineConstantExpr>(dim)
                 ? v < cast<AffineConstantExpr>(dim).getValue()
                 : least && v < *least;
    };
    AffineExpr from, to;
    if (c.getValue() >= kFar)
      from = dim - 1;
    else if (c.getValue() < 0 && within(-c.getValue() - 1))
      from = dim + c.getValue();
    else if (c.getValue() >= 0 && within(c.getValue()))
      from = start;
    if (e.getValue() <= -kFar)
      to = getAffineConstantExpr(-1, dim.getContext());
    else if (e.getValue() < 0 && within(-e.getValue() - 2))
      to = dim + e.getValue();
    else if (e.getValue() >= 0 && within(e.getValue()))
      to = end;
    if (!from || !to)
      return {};
    AffineExpr len = from - to;
    return step == -1 ? len : ceilDivide(len, -step);
  }
  // A constant end within a symbolic dimension is clamped by it at run time
  // (x[:, :10] of a shorter x): its length is not an expression, unless the
  // dimension can never be shorter.
  auto c = dyn_cast<AffineConstantExpr>(end);
  if (!isa<AffineConstantExpr>(dim) && c && c.getValue() >= 0 &&
      c.getValue() < (int64_t(1) << 40)) {
    std::optional<int64_t> least = boundsOf(dim).least;
    if (!least || *least < c.getValue())
      return {};
  }
  auto normalize = [&](AffineExpr e) -> AffineExpr {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() < 0)
        return dim + c.getValue();
      if (c.getValue() >= (int64_t(1) << 40))
        return dim;
      return e;
    }
    // A symbolic bound that is always negative counts from the back. One
    // that is never positive but may be 0 (`x[:, :-pad]` with pad a
    // remainder: 0 slices nothing, a negative bound counts from the back)
    // has no one expression.
    std::optional<int64_t> most = boundsOf(e).most;
    if (most && *most < 0)
      return dim + e;
    if (most && *most <= 0)
      return AffineExpr();
    return e;
  };
  AffineExpr from = normalize(start), to = normalize(end);
  if (!from || !to)
    return {};
  AffineExpr len = to - from;
  return step == 1 ? len : ceilDivide(len, step);
}

namespace {

/// The number of ranks a collective spans (the product of its grid axes'
/// sizes); 0 if unknown.
int64_t groupSize(Operation *op) {
  auto gridRef = op->getAttrOfType<FlatSymbolRefAttr>("grid");
  auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  if (!gridRef || !axes)
    return 0;
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridRef);
  if (!grid)
    return 0;
  int64_t n = 1;
  for (int16_t a : axes.asArrayRef()) {
    if (a < 0 || a >= static_cast<int64_t>(grid.getShape().size()) ||
        ShapedType::isDynamic(grid.getShape()[a]))
      return 0;
    n *= grid.getShape()[a];
  }
  return n;
}

} // namespace

DictionaryAttr dimsAttr(const DimTable &table, ArrayRef<AffineExpr> dims) {
  auto [map, names] = table.write(dims);
  MLIRContext *ctx = table.context();
  return DictionaryAttr::get(
      ctx,
      {NamedAttribute(StringAttr::get(ctx, "map"), AffineMapAttr::get(map)),
       NamedAttribute(StringAttr::get(ctx, "symbols"), names)});
}

Dims SymbolicShapes::readDims(DictionaryAttr stated, int64_t rank) {
  auto map = stated.getAs<AffineMapAttr>("map");
  auto names = stated.getAs<ArrayAttr>("symbols");
  if (!map || !names || map.getValue().getNumResults() != rank ||
      map.getValue().getNumSymbols() != names.size())
    return Dims(rank);
  return table_.read(map.getValue(), names);
}

ArrayRef<AffineExpr> SymbolicShapes::dims(Value value) {
  auto it = memo_.find(value);
  if (it != memo_.end())
    return it->second;
  // Derive the operands first, from the deepest up, with an explicit stack:
  // each rule then finds its operands known, where recursing would go once
  // per op of a long graph.
  SmallVector<std::pair<Value, bool>> stack{{value, false}};
  while (!stack.empty()) {
    auto [v, operandsDone] = stack.pop_back_val();
    if (memo_.count(v))
      continue;
    Operation *def = v.getDefiningOp();
    if (operandsDone || !def ||
        cast<RankedTensorType>(v.getType()).hasStaticShape()) {
      derive(v);
      continue;
    }
    stack.push_back({v, true});
    for (Value operand : def->getOperands())
      if (isa<RankedTensorType>(operand.getType()) && !memo_.count(operand))
        stack.push_back({operand, false});
  }
  return memo_.find(value)->second;
}

void SymbolicShapes::derive(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  // A static type needs no rule.
  Dims d = type.hasStaticShape() ? Dims() : compute(value);
  // Static dimensions of the type win over what the rules derive.
  d.resize(type.getRank());
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!type.isDynamicDim(i))
      d[i] = getAffineConstantExpr(type.getDimSize(i), table_.context());
    else if (d[i])
      d[i] = simplifyAffineExpr(d[i], 0, table_.size());
  }
  memo_[value] = std::move(d);
}

std::optional<Dims> SymbolicShapes::values(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto sizes = dyn_cast_or_null<SizesOp>(def))
    return table_.read(sizes.getMap(), sizes.getSymbols());
  if (auto constant = dyn_cast_or_null<ConstantOp>(def)) {
    auto attr = dyn_cast<DenseIntElementsAttr>(constant.getValue());
    if (!attr || attr.getType().getRank() > 1 || attr.getNumElements() > 64)
      return std::nullopt;
    Dims result;
    bool isBool = attr.getElementType().isInteger(1);
    for (const APInt &v : attr.getValues<APInt>())
      result.push_back(getAffineConstantExpr(
          isBool ? v.getZExtValue() : v.getSExtValue(), table_.context()));
    return result;
  }
  return std::nullopt;
}

Dims SymbolicShapes::broadcastOperands(Operation *op) {
  SmallVector<Dims> all;
  for (Value v : op->getOperands())
    all.push_back(Dims(dims(v)));
  SmallVector<ArrayRef<AffineExpr>> refs(all.begin(), all.end());
  return broadcastDims(refs, table_.context());
}

bool SymbolicShapes::hasRule(Operation *op) {
  noRule_ = false;
  for (Value result : op->getResults())
    (void)compute(result);
  return !noRule_;
}

Dims SymbolicShapes::compute(Value value) {
  MLIRContext *ctx = table_.context();
  auto type = cast<RankedTensorType>(value.getType());
  Dims unknown(type.getRank());
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func)
      return unknown;
    if (auto stated = func.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(),
                                                            kDimsAttr))
      return readDims(stated, type.getRank());
    auto names =
        func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "dfg.dim_names");
    Dims d = unknown;
    if (names)
      for (auto [i, name] : llvm::enumerate(names))
        if (i < d.size())
          d[i] = table_.parseName(cast<StringAttr>(name).getValue());
    return d;
  }

  Operation *op = value.getDefiningOp();
  unsigned resultNo = cast<OpResult>(value).getResultNumber();
  auto in = [&](unsigned i) -> Dims { return Dims(dims(op->getOperand(i))); };

  if (isa<ElementwiseOpInterface>(op))
    return broadcastOperands(op);
  if (auto ruled = dyn_cast<SymbolicShapeOpInterface>(op))
    return ruled.getSymbolicDims(resultNo, *this);
  return llvm::TypeSwitch<Operation *, Dims>(op)
      .Case([&](func::CallOp call) {
        // A pipeline stage: its results' dimensions as the stage states them.
        auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        auto stated = callee ? callee.getResultAttrOfType<DictionaryAttr>(
                                   resultNo, kDimsAttr)
                             : DictionaryAttr();
        return stated ? readDims(stated, type.getRank()) : unknown;
      })
      .Default([&](Operation *o) -> Dims {
        // Ops outside dfg (the shard collectives of a partitioned program)
        // keep their operand's dimensions, except the one they gather,
        // scatter or slice over a group of n ranks: that one is n times as
        // large, or its n-th (the runtime checks that it divides).
        if (isa<DfgDialect>(o->getDialect())) {
          noRule_ = true;
          return unknown;
        }
        if (o->getNumOperands() == 0)
          return unknown;
        Dims d = in(0);
        if (d.size() != static_cast<size_t>(type.getRank()))
          return unknown;
        int64_t n = groupSize(o);
        auto scale = [&](StringRef axisAttr, bool gather) {
          auto axis = o->getAttrOfType<IntegerAttr>(axisAttr);
          if (!axis || axis.getInt() < 0 || axis.getInt() >= type.getRank())
            return;
          AffineExpr &e = d[axis.getInt()];
          if (!e || n <= 0)
            e = AffineExpr();
          else if (!gather)
            e = e.floorDiv(n);
          else if (auto div = dyn_cast<AffineBinaryOpExpr>(e);
                   div && div.getKind() == AffineExprKind::FloorDiv &&
                   div.getRHS() == getAffineConstantExpr(n, ctx))
            e = div.getLHS(); // the pieces a slice over n ranks made
          else
            e = e * n;
        };
        scale("gather_axis", true);
        scale("concat_axis", true);
        scale("scatter_axis", false);
        scale("split_axis", false);
        scale("slice_axis", false);
        return d;
      });
}

std::string SizeAssumption::violation() const {
  if (other)
    return ", where the model's " + node + " needs them equal (" + what + ")";
  if (size)
    return ", where the model's " + node + " needs " + std::to_string(*size) +
           " (it meets a dimension of that size)";
  return ", where the model's " + node +
         " takes nothing; it was compiled for sizes where that is negative, "
         "as its export was traced";
}

DictionaryAttr SizeAssumption::toAttr(const DimTable &table) const {
  Builder b(table.context());
  SmallVector<AffineExpr> exprs{expr};
  if (other)
    exprs.push_back(other);
  auto [map, names] = table.write(exprs);
  SmallVector<NamedAttribute> entries{
      b.getNamedAttr("map", AffineMapAttr::get(map)),
      b.getNamedAttr("names", names),
      b.getNamedAttr("node", b.getStringAttr(node))};
  if (size)
    entries.push_back(b.getNamedAttr("size", b.getI64IntegerAttr(*size)));
  if (other)
    entries.push_back(b.getNamedAttr("what", b.getStringAttr(what)));
  return b.getDictionaryAttr(entries);
}

SmallVector<SizeAssumption> sizeAssumptions(Operation *module,
                                            DimTable &table) {
  SmallVector<SizeAssumption> all;
  for (StringRef kind : {"dfg.dim_negative", "dfg.dim_equal", "dfg.dim_same"}) {
    auto entries = module ? module->getAttrOfType<ArrayAttr>(kind) : ArrayAttr();
    for (Attribute entry : entries ? entries.getValue() : ArrayRef<Attribute>()) {
      auto dict = cast<DictionaryAttr>(entry);
      SizeAssumption a;
      SmallVector<AffineExpr> exprs =
          table.read(cast<AffineMapAttr>(dict.get("map")).getValue(),
                     cast<ArrayAttr>(dict.get("names")));
      a.expr = exprs[0];
      if (exprs.size() > 1)
        a.other = exprs[1];
      if (auto size = dict.getAs<IntegerAttr>("size"))
        a.size = size.getInt();
      if (auto what = dict.getAs<StringAttr>("what"))
        a.what = what.getValue().str();
      a.node = cast<StringAttr>(dict.get("node")).getValue().str();
      all.push_back(std::move(a));
    }
  }
  return all;
}

} // namespace meshc::dfg

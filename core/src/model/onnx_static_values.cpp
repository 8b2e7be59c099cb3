// SPDX-License-Identifier: MIT
// Static shape arithmetic: evaluates the integer tensors torch's dynamic-axes exports compute from shapes
// (Shape, Gather, Concat, Range, ...) where ONNX shape inference cannot follow them.
#include "onnx_import_internal.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardscape::onnx_detail {

int shapeOperandIndex(const std::string& op, const std::string& domain)
{
    if (!defaultDomain(domain))
        return -1;
    if (op == "Reshape" || op == "Expand" || op == "Unsqueeze")
        return 1;
    return op == "ConstantOfShape" ? 0 : -1;
}

std::string tooManyDimensions(double values)
{
    return cat("has a shape operand of ", values,
               " values: a result of at least that many dimensions, over the limit of ", kMaxRank);
}

double elementCount(const onnx::TensorProto& t)
{
    double count = 1;
    for (const auto d : t.dims())
        count *= static_cast<double>(d);
    return count;
}

bool isIntegerType(int t)
{
    using T = onnx::TensorProto;
    return t == T::INT64 || t == T::INT32 || t == T::INT16 || t == T::INT8 || t == T::UINT8 || t == T::UINT16
        || t == T::UINT32 || t == T::UINT64 || t == T::BOOL;
}

std::optional<StaticTensor> readStaticTensor(const onnx::TensorProto& t)
{
    using T = onnx::TensorProto;
    if (!isIntegerType(t.data_type()) || t.data_location() == T::EXTERNAL)
        return std::nullopt;
    StaticTensor s;
    s.type = t.data_type();
    s.shape.assign(t.dims().begin(), t.dims().end());
    const double count = elementCount(s.shape);
    if (count > static_cast<double>(kMaxStaticElements) || count < 0)
        return std::nullopt;
    const auto n = static_cast<std::size_t>(count);
    if (!t.raw_data().empty()) {
        const std::string& raw = t.raw_data();
        const std::size_t width = n == 0 ? 1 : raw.size() / n;
        if (n == 0 || raw.size() != n * width || (width != 1 && width != 2 && width != 4 && width != 8))
            return n == 0 ? std::optional<StaticTensor>(s) : std::nullopt;
        const bool isSigned = t.data_type() == T::INT64 || t.data_type() == T::INT32 || t.data_type() == T::INT16
            || t.data_type() == T::INT8;
        for (std::size_t i = 0; i < n; ++i) {
            std::uint64_t bits = 0;
            std::memcpy(&bits, raw.data() + i * width, width); // little-endian, as ONNX stores it
            std::int64_t value = static_cast<std::int64_t>(bits);
            if (isSigned && width < 8 && (bits >> (8 * width - 1)) & 1U)
                value = static_cast<std::int64_t>(bits | (~std::uint64_t {0} << (8 * width)));
            s.data.push_back(value);
        }
    } else if (t.int64_data_size() > 0) {
        s.data.assign(t.int64_data().begin(), t.int64_data().end());
    } else if (t.int32_data_size() > 0) {
        s.data.assign(t.int32_data().begin(), t.int32_data().end());
    } else if (t.uint64_data_size() > 0) {
        for (const auto v : t.uint64_data())
            s.data.push_back(static_cast<std::int64_t>(v));
    }
    if (s.data.size() != n)
        return std::nullopt;
    return s;
}

std::string shapeOperandProblem(const StaticTensor& s)
{
    constexpr std::int64_t kMaxDim = std::int64_t {1} << 40;
    if (s.data.size() > kMaxRank)
        return tooManyDimensions(static_cast<double>(s.data.size()));
    for (const auto d : s.data)
        if (d < -1 || d > kMaxDim)
            return cat("has a shape operand with the dimension ", d, " (expected -1 to 2^40)");
    return {};
}

void writeStaticTensor(const StaticTensor& s, onnx::TensorProto& t)
{
    using T = onnx::TensorProto;
    if (s.type == T::INT64) {
        for (const auto v : s.data)
            t.add_int64_data(v);
    } else if (s.type == T::UINT64) {
        for (const auto v : s.data)
            t.add_uint64_data(static_cast<std::uint64_t>(v));
    } else {
        for (const auto v : s.data)
            t.add_int32_data(static_cast<std::int32_t>(v)); // int32, int16, int8, uint8, uint16, bool
    }
}

namespace {

std::optional<std::int64_t> scalarOf(const StaticTensor* t)
{
    if (!t || t->data.size() != 1)
        return std::nullopt;
    return t->data.front();
}

/** Normalizes a possibly negative axis; nullopt when out of range. */
std::optional<std::size_t> axisOf(std::int64_t axis, std::size_t rank)
{
    if (axis < 0)
        axis += static_cast<std::int64_t>(rank);
    if (axis < 0 || axis >= static_cast<std::int64_t>(rank))
        return std::nullopt;
    return static_cast<std::size_t>(axis);
}

std::optional<StaticTensor> binaryStatic(const std::string& op, const StaticTensor& a, const StaticTensor& b)
{
    const bool aScalar = a.data.size() == 1;
    const bool bScalar = b.data.size() == 1;
    // An empty operand (a zero-sized dimension) is not folded: against a scalar it would be read at [0].
    if (a.data.empty() || b.data.empty() || (!aScalar && !bScalar && a.data.size() != b.data.size()))
        return std::nullopt;
    StaticTensor out;
    out.type = a.type;
    out.shape = a.shape.size() >= b.shape.size() ? a.shape : b.shape;
    if (aScalar && !bScalar)
        out.shape = b.shape;
    const std::size_t n = std::max(a.data.size(), b.data.size());
    const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual"
        || op == "GreaterOrEqual" || op == "And" || op == "Or";
    if (compare)
        out.type = onnx::TensorProto::BOOL;
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t x = a.data[aScalar ? 0 : i];
        const std::int64_t y = b.data[bScalar ? 0 : i];
        std::int64_t r = 0;
        bool overflow = false; // a malformed model's arithmetic must not be undefined behaviour
        if (op == "Add")
            overflow = __builtin_add_overflow(x, y, &r);
        else if (op == "Sub")
            overflow = __builtin_sub_overflow(x, y, &r);
        else if (op == "Mul")
            overflow = __builtin_mul_overflow(x, y, &r);
        else if (op == "Div" || op == "Mod") {
            if (y == 0 || (y == -1 && x == std::numeric_limits<std::int64_t>::min()))
                return std::nullopt; // division by zero, or a quotient that does not fit
            r = op == "Div" ? x / y : x % y;
        } else if (op == "Max")
            r = std::max(x, y);
        else if (op == "Min")
            r = std::min(x, y);
        else if (op == "Equal")
            r = x == y;
        else if (op == "Less")
            r = x < y;
        else if (op == "Greater")
            r = x > y;
        else if (op == "LessOrEqual")
            r = x <= y;
        else if (op == "GreaterOrEqual")
            r = x >= y;
        else if (op == "And")
            r = (x != 0) && (y != 0);
        else if (op == "Or")
            r = (x != 0) || (y != 0);
        else
            return std::nullopt;
        if (overflow)
            return std::nullopt;
        out.data.push_back(r);
    }
    return out;
}

std::vector<std::int64_t> staticInts(const onnx::NodeProto& node, const std::vector<const StaticTensor*>& in,
                                     std::size_t index, std::string_view attr, bool& ok)
{
    if (index < in.size() && !node.input(static_cast<int>(index)).empty()) {
        if (!in[index]) {
            ok = false;
            return {};
        }
        return in[index]->data;
    }
    return intsAttr(node, attr);
}

} // namespace

std::optional<StaticTensor> evaluateStatic(const onnx::NodeProto& node, const std::vector<const StaticTensor*>& in,
                                           const std::unordered_map<std::string, Shape>& shapes)
{
    if (!defaultDomain(node.domain()))
        return std::nullopt;
    const std::string& op = node.op_type();
    const auto input = [&in](std::size_t i) -> const StaticTensor* { return i < in.size() ? in[i] : nullptr; };
    if (op == "Constant") {
        for (const auto& a : node.attribute()) {
            if (a.name() == "value" && a.has_t())
                return readStaticTensor(a.t());
            if (a.name() == "value_int")
                return StaticTensor {onnx::TensorProto::INT64, {}, {a.i()}};
            if (a.name() == "value_ints")
                return StaticTensor {onnx::TensorProto::INT64,
                                     {static_cast<std::int64_t>(a.ints_size())},
                                     {a.ints().begin(), a.ints().end()}};
        }
        return std::nullopt;
    }
    if (op == "Shape" || op == "Size") {
        const auto it = node.input_size() > 0 ? shapes.find(node.input(0)) : shapes.end();
        if (it == shapes.end())
            return std::nullopt;
        const Shape& dims = it->second;
        if (op == "Size")
            return StaticTensor {onnx::TensorProto::INT64, {}, {static_cast<std::int64_t>(elementCount(dims))}};
        const auto rank = static_cast<std::int64_t>(dims.size());
        std::int64_t start = intAttr(node, "start", 0);
        std::int64_t end = intAttr(node, "end", rank);
        start = std::clamp(start < 0 ? start + rank : start, std::int64_t {0}, rank);
        end = std::clamp(end < 0 ? end + rank : end, std::int64_t {0}, rank);
        StaticTensor s;
        s.data.assign(dims.begin() + start, dims.begin() + std::max(start, end));
        s.shape = {static_cast<std::int64_t>(s.data.size())};
        return s;
    }
    for (std::size_t i = 0; i < in.size(); ++i)
        if (!in[i] && !node.input(static_cast<int>(i)).empty())
            return std::nullopt;
    if (in.empty() || !in[0])
        return std::nullopt;
    const StaticTensor& x = *in[0];
    if (op == "Identity")
        return x;
    if (op == "Cast") {
        StaticTensor s = x;
        s.type = static_cast<int>(intAttr(node, "to", x.type));
        return s; // float casts keep integral values; only integer results are ever written back
    }
    if (op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Flatten") {
        StaticTensor s = x;
        if (op == "Reshape") {
            if (!input(1))
                return std::nullopt;
            s.shape = input(1)->data;
            for (std::size_t k = 0; k < s.shape.size(); ++k)
                if (s.shape[k] == 0 && k < x.shape.size())
                    s.shape[k] = x.shape[k];
            const auto known = std::count_if(s.shape.begin(), s.shape.end(), [](auto d) { return d >= 0; });
            if (known + 1 == static_cast<std::ptrdiff_t>(s.shape.size())) {
                std::int64_t rest = 1;
                for (const auto d : s.shape)
                    rest *= d >= 0 ? d : 1;
                for (auto& d : s.shape)
                    if (d < 0)
                        d = rest > 0 ? static_cast<std::int64_t>(x.data.size()) / rest : 0;
            }
        } else if (op == "Flatten") {
            s.shape = {1, static_cast<std::int64_t>(x.data.size())};
        } else {
            bool ok = true;
            const auto axes = staticInts(node, in, 1, "axes", ok);
            if (!ok)
                return std::nullopt;
            if (op == "Unsqueeze") {
                const std::size_t rank = x.shape.size() + axes.size();
                std::vector<bool> inserted(rank, false);
                for (const auto a : axes)
                    if (const auto k = axisOf(a, rank))
                        inserted[*k] = true;
                s.shape.clear();
                std::size_t next = 0;
                for (std::size_t k = 0; k < rank; ++k)
                    s.shape.push_back(inserted[k] || next >= x.shape.size() ? 1 : x.shape[next++]);
            } else {
                s.shape.clear();
                for (std::size_t k = 0; k < x.shape.size(); ++k) {
                    bool drop = axes.empty() && x.shape[k] == 1;
                    for (const auto a : axes)
                        drop = drop || axisOf(a, x.shape.size()) == k;
                    if (!drop)
                        s.shape.push_back(x.shape[k]);
                }
            }
        }
        if (elementCount(s.shape) != static_cast<double>(s.data.size()))
            return std::nullopt;
        return s;
    }
    if (op == "Gather") {
        const StaticTensor* idx = input(1);
        if (!idx || x.shape.size() > 1 || intAttr(node, "axis", 0) != 0)
            return std::nullopt;
        StaticTensor s;
        s.type = x.type;
        s.shape = idx->shape;
        for (auto i : idx->data) {
            if (i < 0)
                i += static_cast<std::int64_t>(x.data.size());
            if (i < 0 || i >= static_cast<std::int64_t>(x.data.size()))
                return std::nullopt;
            s.data.push_back(x.data[static_cast<std::size_t>(i)]);
        }
        return s;
    }
    if (op == "Concat") {
        StaticTensor s;
        s.type = x.type;
        for (const auto* t : in) {
            if (t->shape.size() > 1)
                return std::nullopt;
            s.data.insert(s.data.end(), t->data.begin(), t->data.end());
        }
        s.shape = {static_cast<std::int64_t>(s.data.size())};
        return s;
    }
    if (op == "Slice") {
        if (x.shape.size() != 1)
            return std::nullopt;
        bool ok = true;
        const auto starts = staticInts(node, in, 1, "starts", ok);
        const auto ends = staticInts(node, in, 2, "ends", ok);
        const auto steps = staticInts(node, in, 4, "steps", ok);
        if (!ok || starts.size() != 1 || ends.size() != 1)
            return std::nullopt;
        const auto n = static_cast<std::int64_t>(x.data.size());
        const std::int64_t step = steps.empty() ? 1 : steps.front();
        if (step != 1)
            return std::nullopt;
        // Clamp before adding: slice bounds are often INT64_MAX or INT64_MIN.
        const auto bound = [n](std::int64_t v) { return v < 0 ? std::max(v, -n) + n : std::min(v, n); };
        const std::int64_t b = bound(starts.front());
        const std::int64_t e = bound(ends.front());
        StaticTensor s;
        s.type = x.type;
        s.data.assign(x.data.begin() + b, x.data.begin() + std::max(b, e));
        s.shape = {static_cast<std::int64_t>(s.data.size())};
        return s;
    }
    if (op == "Neg" || op == "Abs" || op == "Not" || op == "Sign") {
        StaticTensor s = x;
        for (auto& v : s.data)
            v = op == "Neg" ? -v : op == "Abs" ? std::abs(v) : op == "Not" ? (v == 0) : (v > 0) - (v < 0);
        return s;
    }
    if (op == "Where") {
        const StaticTensor* a = input(1);
        const StaticTensor* b = input(2);
        if (!a || !b)
            return std::nullopt;
        const std::size_t n = std::max({x.data.size(), a->data.size(), b->data.size()});
        for (const auto* t : {&x, a, b})
            if (t->data.size() != 1 && t->data.size() != n)
                return std::nullopt;
        StaticTensor s;
        s.type = a->type;
        s.shape = x.data.size() == n ? x.shape : a->data.size() == n ? a->shape : b->shape;
        for (std::size_t i = 0; i < n; ++i) {
            const auto at = [i](const StaticTensor* t) { return t->data[t->data.size() == 1 ? 0 : i]; };
            s.data.push_back(at(&x) != 0 ? at(a) : at(b));
        }
        return s;
    }
    if (op == "ConstantOfShape") {
        const double count = elementCount(x.data);
        if (count > static_cast<double>(kMaxStaticElements) || count < 0)
            return std::nullopt;
        StaticTensor s;
        s.type = onnx::TensorProto::FLOAT; // the default fill is a float 0
        s.shape = x.data;
        std::int64_t fill = 0;
        for (const auto& a : node.attribute())
            if (a.name() == "value" && a.has_t()) {
                if (auto v = readStaticTensor(a.t()); v && v->data.size() == 1) {
                    fill = v->data.front();
                    s.type = v->type;
                } else {
                    return std::nullopt; // a float fill: a mask, not a shape
                }
            }
        s.data.assign(static_cast<std::size_t>(count), fill);
        return s;
    }
    if (op == "Range") {
        const auto start = scalarOf(input(0));
        const auto limit = scalarOf(input(1));
        const auto delta = scalarOf(input(2));
        if (!start || !limit || !delta || *delta == 0)
            return std::nullopt;
        // ceil((limit - start) / delta) in doubles: extreme bounds must not overflow
        const double steps
            = std::ceil((static_cast<double>(*limit) - static_cast<double>(*start)) / static_cast<double>(*delta));
        if (!(steps <= static_cast<double>(kMaxStaticElements)))
            return std::nullopt;
        const auto count = static_cast<std::int64_t>(std::max(0.0, steps));
        StaticTensor s;
        s.type = x.type;
        for (std::int64_t i = 0; i < count; ++i)
            s.data.push_back(*start + i * *delta);
        s.shape = {count};
        return s;
    }
    if (in.size() == 2 && in[1])
        return binaryStatic(op, x, *in[1]);
    return std::nullopt;
}

} // namespace shardscape::onnx_detail

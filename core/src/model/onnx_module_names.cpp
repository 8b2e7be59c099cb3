// SPDX-License-Identifier: MIT
// Module paths from ONNX node and weight names: torch's scoped node names and dotted parameter names.
#include "onnx_import_internal.h"

#include <algorithm>
#include <string>

namespace shardscape::onnx_detail {

std::string scopedModule(const std::string& nodeName)
{
    const auto slash = nodeName.rfind('/');
    if (slash == std::string::npos)
        return {};
    std::string module;
    std::size_t start = 0;
    while (start < slash) {
        const std::size_t end = std::min(nodeName.find('/', start), slash);
        if (end > start) {
            if (!module.empty())
                module += '.';
            module.append(nodeName, start, end - start);
        }
        start = end + 1;
    }
    return module;
}

std::string weightModule(const std::string& name)
{
    if (name.find("::") != std::string::npos)
        return {};
    const auto dot = name.rfind('.');
    return dot == std::string::npos || dot == 0 ? std::string() : name.substr(0, dot);
}

std::string parentModule(const std::string& module)
{
    const auto dot = module.rfind('.');
    return dot == std::string::npos ? std::string() : module.substr(0, dot);
}

std::string commonModule(const std::string& a, const std::string& b)
{
    std::size_t n = 0;
    std::size_t lastDot = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) {
        if (a[n] == '.')
            lastDot = n;
        ++n;
    }
    const bool whole = (n == a.size() || a[n] == '.') && (n == b.size() || b[n] == '.');
    return whole ? a.substr(0, n) : a.substr(0, lastDot);
}

} // namespace shardscape::onnx_detail

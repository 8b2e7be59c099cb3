// SPDX-License-Identifier: MIT
// Host-side logic of shardscape-profile, no GPU and no Qt (the GPU box builds it too): HF config -> GEMM
// shapes, nccl-tests bandwidth factors and buffer sizes, dtype encoders, argument parsing, CPU references,
// and the profile document (checksum, merge, atomic write).
#include "checksum.h"
#include "collective_math.h"
#include "dtype.h"
#include "errors.h"
#include "model_shapes.h"
#include "options.h"
#include "profile_db.h"
#include "reference.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

using namespace shardscape::profiler;
using nlohmann::json;

namespace {

int g_failures = 0;
int g_checks = 0;

void check(bool ok, const std::string& what, int line)
{
    ++g_checks;
    if (!ok) {
        ++g_failures;
        std::fprintf(stderr, "FAIL line %d: %s\n", line, what.c_str());
    }
}
#define CHECK(cond) check((cond), #cond, __LINE__)
#define CHECK_NEAR(a, b, tol) check(std::fabs((a) - (b)) <= (tol), #a " ~= " #b, __LINE__)

/** The BadInput message `f` throws ("" when it throws nothing or something else). */
std::string badInputOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const BadInput& e) {
        return e.what();
    } catch (...) {
        return "<other exception>";
    }
    return "";
}
bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

const GemmShape* findShape(const ModelShapes& s, std::int64_t m, std::int64_t n, std::int64_t k)
{
    for (const auto& g : s.gemms)
        if (g.m == m && g.n == n && g.k == k)
            return &g;
    return nullptr;
}

const json kLlama3_8b = {{"architectures", {"LlamaForCausalLM"}},
                         {"model_type", "llama"},
                         {"hidden_size", 4096},
                         {"intermediate_size", 14336},
                         {"num_attention_heads", 32},
                         {"num_hidden_layers", 32},
                         {"num_key_value_heads", 8},
                         {"vocab_size", 128256},
                         {"rope_scaling", nullptr}};

void testModelShapesLlama()
{
    // Llama-3-8B on one rank of TP 2, 4096 tokens: 16 query + 4 KV heads of 128, MLP 7168, vocab 64128.
    const ModelShapes s = deriveModelShapes(kLlama3_8b, {2, 4096, 1}, "llama3-8b.json");
    CHECK(s.family == "llama");
    CHECK(s.gemms.size() == 11); // 3 qkv + 2 attn_out + 3 MLP (gate = up, down repeats them) + 3 lm_head
    CHECK(s.gemms.front().m == 4096 && s.gemms.front().n == 3072 && s.gemms.front().k == 4096);
    CHECK(s.gemms.front().name == "qkv.fwd");
    CHECK(findShape(s, 4096, 4096, 3072) && findShape(s, 4096, 4096, 3072)->name == "qkv.bwd_input");
    CHECK(findShape(s, 3072, 4096, 4096) && findShape(s, 3072, 4096, 4096)->name == "qkv.bwd_weight");
    CHECK(findShape(s, 4096, 4096, 2048)); // attn_out forward: in = 16 * 128
    const GemmShape* attnBwd = findShape(s, 4096, 2048, 4096);
    CHECK(attnBwd && attnBwd->name == "attn_out.bwd_input+attn_out.bwd_weight");
    const GemmShape* gate = findShape(s, 4096, 7168, 4096);
    CHECK(gate && contains(gate->name, "mlp_gate.fwd") && contains(gate->name, "mlp_up.fwd")
          && contains(gate->name, "mlp_down.bwd_input") && contains(gate->name, "mlp_down.bwd_weight"));
    CHECK(findShape(s, 4096, 4096, 7168) && contains(findShape(s, 4096, 4096, 7168)->name, "mlp_down.fwd"));
    CHECK(findShape(s, 7168, 4096, 4096)); // gate/up weight gradient
    CHECK(findShape(s, 4096, 64128, 4096) && findShape(s, 4096, 64128, 4096)->name == "lm_head.fwd");
    CHECK(findShape(s, 64128, 4096, 4096) && findShape(s, 64128, 4096, 4096)->name == "lm_head.bwd_weight");
    CHECK(s.attention.batch == 1 && s.attention.heads == 16 && s.attention.seq == 4096 && s.attention.headDim == 128);

    // TP 16 > 8 KV heads: each rank keeps one (replicated) KV head; micro-batch 2 doubles the tokens.
    const ModelShapes tp16 = deriveModelShapes(kLlama3_8b, {16, 1024, 2}, "llama3-8b.json");
    CHECK(tp16.gemms.front().m == 2048 && tp16.gemms.front().n == (2 + 2 * 1) * 128);
    CHECK(findShape(tp16, 2048, 896, 4096)); // MLP 14336 / 16
    CHECK(tp16.attention.batch == 2 && tp16.attention.heads == 2 && tp16.attention.seq == 1024);

    CHECK(contains(badInputOf([] {
                       deriveModelShapes(kLlama3_8b, {3, 2048, 1}, "x.json");
                   }),
                   "does not divide the 32 attention heads"));
    json noHidden = kLlama3_8b;
    noHidden.erase("hidden_size");
    CHECK(contains(badInputOf([&] {
                       deriveModelShapes(noHidden, {1, 2048, 1}, "x.json");
                   }),
                   "x.json: 'hidden_size' is missing"));
    json bert = kLlama3_8b;
    bert["model_type"] = "bert";
    CHECK(contains(badInputOf([&] { deriveModelShapes(bert, {1, 2048, 1}, "x.json"); }), "'bert' is not supported"));
    json badHeadDim = kLlama3_8b;
    badHeadDim["head_dim"] = "128";
    CHECK(contains(badInputOf([&] { deriveModelShapes(badHeadDim, {1, 2048, 1}, "x.json"); }), "'head_dim' must be"));
}

void testModelShapesGpt2AndMoe()
{
    const json gpt2 = {{"model_type", "gpt2"}, {"n_embd", 768}, {"n_head", 12},
                       {"n_inner", nullptr},   {"n_layer", 12}, {"vocab_size", 50257}};
    const ModelShapes s = deriveModelShapes(gpt2, {1, 1024, 2}, "gpt2.json");
    CHECK(s.family == "gpt2");
    CHECK(findShape(s, 2048, 2304, 768)); // fused QKV, 3 * 768
    // n_inner null: 4h; the MLP-down input gradient has the same shape as the MLP-up forward.
    CHECK(findShape(s, 2048, 3072, 768) && findShape(s, 2048, 3072, 768)->name == "mlp_up.fwd+mlp_down.bwd_input");
    CHECK(findShape(s, 2048, 768, 3072) && contains(findShape(s, 2048, 768, 3072)->name, "mlp_down.fwd"));
    CHECK(findShape(s, 2048, 50257, 768));
    for (const auto& g : s.gemms)
        CHECK(!contains(g.name, "gate")); // GPT-2's MLP has no gate
    const ModelShapes tp4 = deriveModelShapes(gpt2, {4, 1024, 1}, "gpt2.json");
    CHECK(findShape(tp4, 1024, 3 * 3 * 64, 768)); // 3 heads per rank
    CHECK(findShape(tp4, 1024, 12565, 768)); // ceil(50257 / 4)
    CHECK(contains(badInputOf([&] { deriveModelShapes(gpt2, {5, 1024, 1}, "gpt2.json"); }), "--tp 5"));

    json mixtral = kLlama3_8b;
    mixtral["model_type"] = "mixtral";
    mixtral["vocab_size"] = 32000;
    mixtral["num_local_experts"] = 8;
    mixtral["num_experts_per_tok"] = 2;
    const ModelShapes moe = deriveModelShapes(mixtral, {1, 4096, 1}, "mixtral.json");
    CHECK(findShape(moe, 4096, 8, 4096) && findShape(moe, 4096, 8, 4096)->name == "router.fwd");
    CHECK(findShape(moe, 1024, 14336, 4096)); // 4096 tokens * 2 / 8 experts per expert
    CHECK(findShape(moe, 14336, 4096, 1024)); // expert weight gradient over its tokens
}

void testShapesDocument()
{
    const json doc = json::parse(R"([{"m": 128, "n": 256, "k": 512, "dtype": "fp16", "name": "mine"},
                                     {"m": 1, "n": 2, "k": 3, "dtype": "bf16"}])");
    const auto cases = parseShapesDocument(doc, "s.json");
    CHECK(cases.size() == 2);
    CHECK(cases[0].shape.m == 128 && cases[0].shape.n == 256 && cases[0].shape.k == 512);
    CHECK(cases[0].dtype == DType::FP16 && cases[0].shape.name == "mine");
    CHECK(cases[1].dtype == DType::BF16 && cases[1].shape.name == "shapes[1]");
    CHECK(contains(
        badInputOf([] { parseShapesDocument(json::parse(R"([{"m":1,"n":2,"k":3,"dtype":"bf16","x":1}])"), "s"); }),
        "row 0: unknown key 'x'"));
    CHECK(contains(badInputOf([] { parseShapesDocument(json::parse(R"([{"m":0,"n":2,"k":3,"dtype":"bf16"}])"), "s"); }),
                   "'m' must be a whole number"));
    CHECK(contains(badInputOf([] { parseShapesDocument(json::parse(R"([{"m":1,"n":2,"k":3,"dtype":"int4"}])"), "s"); }),
                   "unknown dtype"));
    CHECK(contains(badInputOf([] { parseShapesDocument(json::parse(R"({"m":1})"), "s"); }), "non-empty JSON list"));
}

void testCollectiveMath()
{
    CHECK_NEAR(busBandwidthFactor(Collective::AllReduce, 8), 1.75, 1e-12);
    CHECK_NEAR(busBandwidthFactor(Collective::AllGather, 8), 0.875, 1e-12);
    CHECK_NEAR(busBandwidthFactor(Collective::ReduceScatter, 8), 0.875, 1e-12);
    CHECK_NEAR(busBandwidthFactor(Collective::AllToAll, 4), 0.75, 1e-12);
    CHECK_NEAR(busBandwidthFactor(Collective::SendRecv, 8), 1.0, 1e-12);
    CHECK_NEAR(busBandwidthFactor(Collective::AllReduce, 2), 1.0, 1e-12);
    CHECK(busBandwidthFactor(Collective::AllReduce, 1) == 0.0);
    // The nccl-tests line "134217728 ... 640.50 209.55 366.72" (8 ranks, all_reduce).
    CHECK_NEAR(134217728 / 640.50e-6 / 1e9, 209.55, 0.005);
    CHECK_NEAR(busBandwidthGBps(Collective::AllReduce, 134217728, 640.50e-6, 8), 366.72, 0.005);
    CHECK(collectiveName(Collective::AllToAll) == "all_to_all");
    CHECK(allCollectives().size() == 5);

    const auto ag = collectiveBuffers(Collective::AllGather, 1 << 20, 8, 2);
    CHECK(ag.chunk == 65536 && ag.sendCount == 65536 && ag.recvCount == 524288 && ag.sizeBytes == 1 << 20);
    const auto rs = collectiveBuffers(Collective::ReduceScatter, 1 << 20, 8, 2);
    CHECK(rs.sendCount == 524288 && rs.recvCount == 65536 && rs.sizeBytes == 1 << 20);
    const auto a2a = collectiveBuffers(Collective::AllToAll, 1000, 3, 2);
    CHECK(a2a.chunk == 166 && a2a.sendCount == 498 && a2a.recvCount == 498 && a2a.sizeBytes == 996);
    const auto ar = collectiveBuffers(Collective::AllReduce, 1001, 6, 2);
    CHECK(ar.sendCount == 500 && ar.recvCount == 500 && ar.sizeBytes == 1000);
    const auto sr = collectiveBuffers(Collective::SendRecv, 4096, 2, 2);
    CHECK(sr.sendCount == 2048 && sr.sizeBytes == 4096);
    CHECK(collectiveBuffers(Collective::AllGather, 8, 8, 2).sizeBytes == 0);
    CHECK(collectiveSizes(false).front() == 1024 && collectiveSizes(false).back() == (1ll << 30));
    CHECK(collectiveSizes(false).size() == 11 && collectiveSizes(true).size() == 4);
}

void testDTypes()
{
    CHECK(encodeBF16(1.0f) == 0x3F80 && encodeBF16(-2.0f) == 0xC000);
    CHECK(encodeBF16(1.00390625f) == 0x3F80); // exactly half-way: ties to even
    CHECK(encodeBF16(1.005859375f) == 0x3F81); // above half-way
    CHECK(encodeBF16(1.01171875f) == 0x3F82); // half-way between 0x3F81 and 0x3F82: to even
    CHECK(encodeFP16(1.0f) == 0x3C00 && encodeFP16(65504.0f) == 0x7BFF && encodeFP16(1e5f) == 0x7C00);
    CHECK(encodeFP16(0.1f) == 0x2E66 && encodeFP16(std::ldexp(1.0f, -24)) == 0x0001);
    CHECK(encodeFP8E4M3(1.0f) == 0x38 && encodeFP8E4M3(448.0f) == 0x7E && encodeFP8E4M3(1000.0f) == 0x7E);
    CHECK(encodeFP8E4M3(-0.5f) == 0xB0 && encodeFP8E4M3(std::ldexp(1.0f, -9)) == 0x01 && encodeFP8E4M3(0.0f) == 0);
    CHECK(encodeFP8E4M3(1e-4f) == 0 && encodeFP8E4M3(-1e-4f) == 0x80 && encodeFP16(1e-9f) == 0
          && encodeBF16(1e-45f) == 0);
    CHECK(encodeFP8E4M3(std::ldexp(1.5f, -10)) == 0x01); // 0.75 of the smallest subnormal rounds up to it
    CHECK(encodeFP8E4M3(1.0625f) == 0x38); // half-way between 1.0 and 1.125: to even
    CHECK(std::isnan(decodeFP8E4M3(0x7F)) && decodeFP8E4M3(0x7E) == 448.0f);
    // Every finite code survives decode -> encode.
    int mismatches = 0;
    for (unsigned b = 0; b < 256; ++b)
        if ((b & 0x7F) != 0x7F && encodeFP8E4M3(decodeFP8E4M3(static_cast<std::uint8_t>(b))) != b)
            ++mismatches;
    for (unsigned b = 0; b < 65536; ++b) {
        if ((b & 0x7C00) != 0x7C00 && encodeFP16(decodeFP16(static_cast<std::uint16_t>(b))) != b)
            ++mismatches;
        if ((b & 0x7F80) != 0x7F80 && encodeBF16(decodeBF16(static_cast<std::uint16_t>(b))) != b)
            ++mismatches;
    }
    CHECK(mismatches == 0);
    CHECK(decodeValues(encodeValues({1.5f, -0.25f}, DType::BF16), DType::BF16) == std::vector<float>({1.5f, -0.25f}));
    CHECK(encodeValues({1.0f, 2.0f}, DType::FP8E4M3).size() == 2 && encodeValues({1.0f}, DType::TF32).size() == 4);

    CHECK(parseDType("fp16") == DType::FP16 && parseDType("f16") == DType::FP16 && parseDType("fp8") == DType::FP8E4M3);
    CHECK(parseDType("e4m3") == DType::FP8E4M3 && parseDType("fp32") == DType::FP32 && !parseDType("int8"));
    CHECK(dtypeName(DType::FP32) == "f32" && dtypeName(DType::FP16) == "f16" && dtypeName(DType::FP8E4M3) == "fp8");
    CHECK(dtypeMinComputeCapability(DType::FP8E4M3) == 89 && dtypeMinComputeCapability(DType::BF16) == 80);
}

void testOptions()
{
    const Options d = parseOptions({});
    CHECK(d.matmul && d.memory && d.attention && d.collectives && !d.phasesGiven);
    CHECK(d.dtypes == allDTypes() && d.iters == 20 && d.warmup == 5 && d.outDir.empty() && d.tp == 1);
    const Options o = parseOptions({"--matmul", "--dtypes=bf16,fp8,bf16", "--iters", "7", "--out", "/tmp/x", "--model",
                                    "c.json", "--tp=4", "--seq-len", "8192", "--progress", "--quick"});
    CHECK(o.matmul && !o.memory && !o.attention && !o.collectives && o.phasesGiven);
    CHECK(o.dtypes == std::vector<DType>({DType::BF16, DType::FP8E4M3}));
    CHECK(o.iters == 7 && o.outDir == "/tmp/x" && o.tp == 4 && o.seqLen == 8192 && o.progress && o.quick);
    CHECK(contains(badInputOf([] { parseOptions({"--iters", "0"}); }), "--iters = 0 is out of range"));
    CHECK(contains(badInputOf([] { parseOptions({"--iters", "3x"}); }), "needs a whole number"));
    CHECK(contains(badInputOf([] { parseOptions({"--tp", "2"}); }), "no --model was given"));
    CHECK(contains(badInputOf([] { parseOptions({"--quick=1"}); }), "--quick takes no value"));
    CHECK(contains(badInputOf([] { parseOptions({"--device"}); }), "--device needs a value"));
    CHECK(contains(badInputOf([] { parseOptions({"--frobnicate"}); }), "unknown option '--frobnicate'"));
    CHECK(contains(badInputOf([] { parseOptions({"matmul"}); }), "unexpected argument 'matmul'"));
    CHECK(contains(usageText(), "--collectives") && contains(usageText(), "Exit codes"));
}

void testReferences()
{
    // A = [[1, 2], [3, 4]] (rows of k), B rows [[5, 6], [7, 8]]: C(i, j) = A_i . B_j, column-major.
    std::vector<double> c;
    std::vector<double> abs;
    referenceGemm({1, 2, 3, 4}, {5, 6, 7, -8}, 2, 2, 2, c, abs);
    CHECK(c == std::vector<double>({17, 39, -9, -11}) && abs == std::vector<double>({17, 39, 23, 53}));
    CHECK(compareOutputs({17.f, 39.f, -9.f, -11.f}, c, abs, 1e-6, 0).ok);
    CHECK(!compareOutputs({17.f, 39.f, -9.f, -11.1f}, c, abs, 1e-6, 0).ok);
    CHECK(!compareOutputs({17.f, NAN, -9.f, -11.f}, c, abs, 1.0, 1.0).ok);
    const CheckResult r = compareOutputs({17.f, 39.f, -9.f, -12.f}, c, {}, 0.5, 0);
    CHECK(!r.ok && r.worstIndex == 3 && contains(r.describe(), "element 3 of 4"));
    double absTol = 0;
    double relTol = 0;
    gemmTolerance(DType::BF16, 320, absTol, relTol);
    CHECK(relTol == std::ldexp(1.0, -8) && absTol < 1e-4);

    const std::vector<float> values = randomValues(1000, DType::FP8E4M3, 42);
    bool allRepresentable = true;
    bool anyNonZero = false;
    for (const float v : values) {
        allRepresentable = allRepresentable && quantize(DType::FP8E4M3, v) == v && v >= -1 && v <= 1;
        anyNonZero = anyNonZero || v != 0;
    }
    CHECK(allRepresentable && anyNonZero);

    const auto softmax = referenceSoftmax({1, 2, 3, 0, 0, 0}, 2, 3);
    CHECK_NEAR(softmax[0] + softmax[1] + softmax[2], 1.0, 1e-12);
    CHECK_NEAR(softmax[3], 1.0 / 3, 1e-12);
    const auto rms = referenceRmsNorm({3, 4}, {1, 2}, 1, 2, 0.0);
    CHECK_NEAR(rms[0], 3 / std::sqrt(12.5), 1e-9);
    CHECK_NEAR(rms[1], 8 / std::sqrt(12.5), 1e-9);
    const auto ln = referenceLayerNorm({1, 3}, {1, 1}, {0, 10}, 1, 2, 0.0);
    CHECK_NEAR(ln[0], -1.0, 1e-9);
    CHECK_NEAR(ln[1], 11.0, 1e-9);
    CHECK_NEAR(referenceBiasGelu({0}, {0}, 1, 1)[0], 0.0, 1e-12);
    CHECK_NEAR(referenceBiasGelu({1}, {1}, 1, 1)[0], 1.9545976, 1e-6); // gelu_tanh(2)
    // Causal attention: row 0 sees only v_0; row 1 with equal scores averages v_0 and v_1.
    const auto o = referenceCausalAttention({1, 0, 0, 0}, {0, 0, 0, 0}, {2, 4, 6, 8}, 1, 2, 2, 1.0);
    CHECK(o == std::vector<double>({2, 4, 4, 6}));
}

ProfileDocument sampleDocument()
{
    ProfileDocument doc;
    doc.createdUtc = "2026-01-02T03:04:05Z";
    doc.tool = "shardscape-profile 0.1.0";
    doc.device = {"NVIDIA H100 80GB HBM3", 8, 85'029'158'912, 553'648'128, 2.9e12, 132, "9.0", "13000", "13000"};
    doc.matmul = {{DType::BF16, 4096, 4096, 4096, 1.6e-4}};
    doc.attention = {{DType::BF16, 1, 32, 4096, 128, 3.0e-3}};
    doc.memoryOps = {{"rmsnorm", DType::BF16, 268'443'648, 1.1e-4}};
    doc.collectives = {{Collective::AllReduce, 134217728, 8, 8, DType::BF16, 640.50e-6}};
    return doc;
}

void testProfileDocument()
{
    json doc = profileJson(sampleDocument());
    CHECK(doc["format"] == "shardscape.profile/1" && !doc.contains("checksum"));
    CHECK(doc["device"].size() == 9 && doc["device"]["memory_bytes"] == 85'029'158'912);
    CHECK(doc["matmul"][0] == json::parse(R"({"dtype":"bf16","m":4096,"n":4096,"k":4096,"time_s":1.6e-4,
                                              "source":"cublasLt"})"));
    CHECK(doc["attention"][0]["flops"] == 4.0 * 32 * 4096 * 4096 * 128 && doc["attention"][0]["causal"] == true);
    CHECK(doc["memory_ops"][0].size() == 4 && doc["memory_ops"][0]["op"] == "rmsnorm");
    CHECK_NEAR(doc["collectives"][0]["busbw_gb_per_s"].get<double>(), 366.72, 0.005);
    CHECK(doc["collectives"][0]["op"] == "all_reduce" && doc["collectives"][0]["source"] == "shardscape-profile");

    addChecksum(doc);
    const std::string sum = doc["checksum"];
    CHECK(sum.size() == 8 + 16 && sum.starts_with("fnv1a64:"));
    json withoutSum = doc;
    withoutSum.erase("checksum");
    CHECK(sum == checksumText(withoutSum.dump())); // the FORMAT.md rule, spelled out
    CHECK(checksumMatches(doc));
    CHECK(checksumMatches(json::parse(doc.dump(2)))); // survives pretty printing and re-parsing
    json edited = doc;
    edited["matmul"][0]["time_s"] = 1.7e-4;
    CHECK(!checksumMatches(edited));

    ProfileDocument bad = sampleDocument();
    bad.matmul[0].seconds = 0;
    bool threw = false;
    try {
        profileJson(bad);
    } catch (const std::invalid_argument& e) {
        threw = contains(e.what(), "matmul.time_s");
    }
    CHECK(threw);

    // A collectives-only run keeps the old matmul rows and the collectives of another rank layout.
    json old = doc;
    old["collectives"].push_back({{"op", "all_reduce"},
                                  {"bytes", 1024},
                                  {"ranks", 16},
                                  {"ranks_per_node", 8},
                                  {"dtype", "bf16"},
                                  {"time_s", 1e-4},
                                  {"busbw_gb_per_s", 0.02},
                                  {"source", "nccl-tests:ar16.txt"}});
    ProfileDocument fresh = sampleDocument();
    fresh.matmul.clear();
    fresh.collectives[0].seconds = 700e-6;
    const json merged = mergeProfiles(profileJson(fresh), old, {false, false, false, true});
    CHECK(merged["matmul"] == doc["matmul"] && !merged.contains("checksum"));
    CHECK(merged["collectives"].size() == 2 && merged["collectives"][0]["time_s"] == 700e-6);
    CHECK(merged["collectives"][1]["ranks"] == 16);

    CHECK(deviceSlug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3");
    CHECK(deviceSlug("NVIDIA H200") == "nvidia-h200" && deviceSlug("A/B c") == "a-b-c");
}

void testFileRoundTrip()
{
    const std::filesystem::path dir
        = std::filesystem::temp_directory_path() / ("tst_profile_host." + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    prepareOutputDir(dir / "nested");
    const std::filesystem::path file = dir / "nested" / "profile.json";
    json doc = profileJson(sampleDocument());
    addChecksum(doc);
    writeFileAtomic(file, doc.dump(2) + "\n");
    CHECK(std::filesystem::exists(file));
    int entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir / "nested"))
        ++entries;
    CHECK(entries == 1); // no temporary left behind
    std::string why;
    CHECK(reusableProfile(file, "NVIDIA H100 80GB HBM3", why) == doc && why.empty());
    CHECK(reusableProfile(file, "NVIDIA H200", why).is_null() && contains(why, "another device"));
    std::ofstream(file) << doc.dump().substr(0, 100); // truncated
    CHECK(reusableProfile(file, "NVIDIA H100 80GB HBM3", why).is_null() && contains(why, "not a JSON object"));
    CHECK(reusableProfile(dir / "missing.json", "x", why).is_null() && why.empty());
    CHECK(utcNow().size() == 20 && utcNow().back() == 'Z');
    std::filesystem::remove_all(dir);
}

void testChecksum()
{
    static_assert(fnv1a64("") == 0xcbf29ce484222325ull);
    CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
    CHECK(fnv1a64("foobar") == 0x85944171f73967e8ull);
    CHECK(checksumText("") == "fnv1a64:cbf29ce484222325");
}

void testGrids()
{
    const auto full = defaultGemmGrid(false);
    CHECK(full.front().m == 256 && full.size() == 7 + 18 + 4);
    bool has16k = false;
    for (const auto& g : full)
        has16k = has16k || (g.m == 16384 && g.n == 16384 && g.k == 16384);
    CHECK(has16k);
    CHECK(defaultGemmGrid(true).size() == 6);
    CHECK(defaultAttentionGrid(false).size() == 7 && defaultAttentionGrid(true).size() == 2);
}

} // namespace

int main()
{
    testChecksum();
    testDTypes();
    testCollectiveMath();
    testModelShapesLlama();
    testModelShapesGpt2AndMoe();
    testShapesDocument();
    testOptions();
    testReferences();
    testProfileDocument();
    testFileRoundTrip();
    testGrids();
    std::printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}

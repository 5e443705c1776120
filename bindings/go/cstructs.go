package zerfoo

// Go mirrors of the C structs in zerfoo.h, field for field (amd64/arm64 layout; sizes and
// offsets are checked in layout_test.go). They are only ever passed to C by pointer.

type cModelParams struct { // zf_model_params, 56 bytes
	structSize       uint32
	device           int32
	gpuIndex         int32
	nThreads         int32
	flags            uint32
	reserved0        uint32
	progress         uintptr // zf_progress_cb (unused: NULL)
	progressUserData uintptr
	maxBatch         int32 // appended in 0.3
	reserved1        uint32
	prefixCacheMiB   int32 // appended in 0.4
	reserved2        uint32
}

type cModelSummary struct { // zf_model_summary, 112 bytes
	structSize   uint32
	backend      int32
	architecture *byte // C strings owned by the model
	name         *byte
	quant        *byte
	nParams      uint64
	fileSize     uint64
	nCtxTrain    int32
	nVocab       int32
	nLayer       int32
	nEmbd        int32
	nHead        int32
	nHeadKV      int32
	tokenBOS     int32
	tokenEOS     int32
	tokenEOT     int32
	nTensors     int32
	tokenFIMPre  int32 // appended in 0.5
	tokenFIMSuf  int32
	tokenFIMMid  int32
	tokenFIMPad  int32
	tokenFIMRep  int32
	tokenFIMSep  int32
}

type cCacheInfo struct { // zf_cache_info, 56 bytes (appended in 0.4)
	structSize    uint32
	blockTokens   int32
	capacityBytes uint64
	bytes         uint64
	blocks        uint64
	hitTokens     uint64
	storedBlocks  uint64
	evictedBlocks uint64
	mappedBlocks  uint64
}

type cChatMessage struct { // zf_chat_message, 16 bytes
	role    *byte
	content *byte
}

type cChatMessageV2 struct { // zf_chat_message_v2, 64 bytes
	structSize       uint32
	reserved         uint32
	role             *byte
	content          *byte
	reasoningContent *byte
	toolCallsJSON    *byte
	toolCallID       *byte
	name             *byte
	extraJSON        *byte
}

type cChatParams struct { // zf_chat_params, 56 bytes
	structSize    uint32
	flags         uint32
	templateName  *byte
	templateText  *byte
	toolsJSON     *byte
	documentsJSON *byte
	extraJSON     *byte
	timeUnix      int64
}

type cSessionParams struct { // zf_session_params, 32 bytes
	structSize uint32
	nCtx       int32
	nThreads   int32
	kvType     int32
	flags      uint32 // appended in 0.4
	reserved0  uint32
	kvTypeV    int32 // appended in 0.7
	reserved1  uint32
}

type cGenParams struct { // zf_generate_params, 104 bytes
	structSize        uint32
	maxTokens         int32
	temperature       float32
	topK              int32
	topP              float32
	minP              float32
	repeatPenalty     float32
	repeatLastN       int32
	flags             uint32
	reserved0         uint32
	seed              uint64
	stop              **byte // array of n_stop NUL-terminated strings (Go memory, borrowed for the call)
	nStop             uintptr
	nLogprobs         int32 // appended in 0.3
	reserved1         uint32
	constraint        *byte // appended in 0.3 (with constraint_kind): NUL-terminated, Go memory borrowed for the call
	constraintKind    int32
	reserved2         uint32
	constraintTrigger *byte // appended in 0.3: a lazy constraint's trigger, NUL-terminated, borrowed for the call
	draftMax          int32 // appended in 0.4 (with draft_min): prompt-lookup speculative decoding
	draftMin          int32
}

type cGenResult struct { // zf_generate_result, 40 bytes
	structSize uint32
	stopReason int32
	nPrompt    int32
	nGenerated int32
	promptMs   float64
	decodeMs   float64
	nDrafted   int32 // appended in 0.4 (with n_accepted)
	nAccepted  int32
}

type cEmbedParams struct { // zf_embed_params, 24 bytes (appended in 0.4)
	structSize uint32
	flags      uint32
	pooling    int32
	dimensions int32
	nThreads   int32
	reserved   uint32
}

type cTurnParams struct { // zf_turn_params, 56 bytes (appended in 0.5; mmproj in 0.7)
	structSize   uint32
	flags        uint32
	requestJSON  *byte // NUL-terminated, Go memory borrowed for zf_chat_turn_begin / zf_chat_turn
	templateName *byte
	templateText *byte
	generate     *cGenParams
	timeUnix     int64
	mmproj       uintptr // zf_mmproj*: the request's image parts (WithTurnMmproj)
}

type cTurnEvent struct { // zf_turn_event, 112 bytes (appended in 0.5); every pointer borrowed until the next event
	structSize    uint32
	kind          int32
	text          *byte // not NUL-terminated: textLen bytes
	textLen       uintptr
	toolIndex     int32
	finishReason  int32
	toolID        *byte // NUL-terminated
	toolName      *byte // NUL-terminated
	logprobs      *TokenLogprob
	nLogprobs     uintptr
	logprobStride uintptr
	stopReason    int32
	nPrompt       int32
	nCached       int32
	nGenerated    int32
	nDrafted      int32
	nAccepted     int32
	promptMs      float64
	decodeMs      float64
}

// zf_token_logprob (8 bytes) is TokenLogprob itself: {int32 token; float logprob}.

# shellcheck shell=bash
# The environment a `research` process (a local run, a Temporal worker) needs
# to use scripts/fakeapi instead of real providers. Source it with FAKEAPI_URL
# set to the URL the fake printed ("fakeapi listening on URL"):
#
#	FAKEAPI_URL=http://127.0.0.1:PORT . scripts/fakeapi/env.sh
#
# FAKEAPI_KEY is the fake's --api-key (default sk-fake).

: "${FAKEAPI_URL:?set FAKEAPI_URL to the URL the fake printed, e.g. http://127.0.0.1:40123}"

# The model: OpenAI's protocol at the fake, every role on one model.
export OPENAI_API_KEY="${FAKEAPI_KEY:-sk-fake}"
export OPENAI_BASE_URL="$FAKEAPI_URL/v1"
export DEEPGRAPH_MODEL=openai:gpt-4o-mini
# Search: the fake's SearXNG, whose results are the fake's own loopback
# pages, which the page reader refuses unless private URLs are allowed.
export SEARXNG_URL="$FAKEAPI_URL"
export DEEPGRAPH_SEARCH=searxng
export DEEPGRAPH_ALLOW_PRIVATE_URLS=true
# Keep no run store. (A user config file may still be read; the variables
# here win over it.)
export DEEPGRAPH_STORE=off
unset DEEPGRAPH_CONFIG
# No other provider may be picked up from the caller's environment.
unset GEMINI_API_KEY GOOGLE_API_KEY GOOGLE_GEMINI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL \
	TAVILY_API_KEY BRAVE_API_KEY OLLAMA_HOST

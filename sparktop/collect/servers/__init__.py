"""Model servers as named consumers: Ollama, vLLM, llama.cpp and SGLang found without configuration.

`protocols` reads one server (pure parsing plus a short HTTP GET); `discovery` lists where servers may answer;
`collector` probes them in a background thread and hands the latest readings to each tick without waiting.
"""

"""OpenAI's Responses API as a dialect (issue 24): `POST /v1/responses` and the stored responses."""

//! What the KServe fuzz targets check on every decoded request: the error, if
//! any, is a client error (400 or 413); a request's tensors hold exactly their
//! shape's elements; and the inputs sent back as outputs encode in the REST
//! JSON and binary forms and as a gRPC response whose raw contents are the
//! tensors' own bytes; and the request written as a gRPC `ModelInferRequest`
//! (what `lanes bench` sends for a REST body) decodes back to itself, or is
//! refused with a 400 for a parameter gRPC cannot carry.

use bytes::Bytes;
use lanes_kserve::proto::ModelInferRequest;
use lanes_kserve::rest::encode_response;
use lanes_kserve::CodecConfig;
use prost::Message;
use lanes_kserve::{
    grpc, InferRequest, InferResponse, KserveError, OutputChoice, OutputTensor, Tensor,
};

pub fn check(result: Result<InferRequest, KserveError>) {
    let request = match result {
        Ok(request) => request,
        Err(error) => {
            assert!(matches!(error.http_status(), 400 | 413), "{error:?}");
            return;
        }
    };
    match grpc::encode_request(&request) {
        Ok(message) => {
            let wire = Bytes::from(message.encode_to_vec());
            let decoded = ModelInferRequest::decode(wire).expect("prost reads what it wrote");
            let again = grpc::decode_request(decoded, &CodecConfig::default())
                .expect("a request's own gRPC form is accepted");
            // proto3 has no "absent" for a string or a list: an empty id and an
            // empty list of outputs are gRPC's defaults and read back as none.
            let mut expected = request.clone();
            expected.id = expected.id.filter(|id| !id.is_empty());
            expected.outputs = expected.outputs.filter(|o| !o.is_empty());
            assert_eq!(again, expected);
        }
        Err(error) => assert_eq!(error.http_status(), 400, "{error:?}"),
    }
    let mut outputs = Vec::with_capacity(request.inputs.len());
    for input in &request.inputs {
        let t = &input.tensor;
        let again = Tensor::new(t.datatype(), t.shape().to_vec(), t.data().clone());
        assert_eq!(again.as_ref(), Ok(t), "{t:?} does not fit its shape");
        outputs.push(OutputTensor {
            name: input.name.clone(),
            tensor: t.clone(),
        });
    }
    let response = InferResponse {
        model_name: request.model.name.clone(),
        model_version: request.model.version.clone().unwrap_or_default(),
        id: request.id.clone(),
        outputs,
    };
    for binary in [false, true] {
        let choice = OutputChoice::new(None, binary);
        let encoded = encode_response(&response, &choice).expect("every output exists");
        assert_eq!(
            encoded.header_length.is_some(),
            binary && !response.outputs.is_empty()
        );
        if let Some(head) = encoded.header_length {
            assert!(head <= encoded.len());
        }
    }
    // The request's own choice: its named outputs must exist, or it is a 400.
    if let Err(e) = encode_response(&response, &OutputChoice::of(&request)) {
        assert_eq!(e.http_status(), 400);
    }
    let message = grpc::encode_response(&response, &OutputChoice::new(None, false))
        .expect("every output exists");
    for (raw, output) in message.raw_output_contents.iter().zip(&response.outputs) {
        assert_eq!(raw, &output.tensor.raw());
    }
}
